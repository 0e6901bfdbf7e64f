// Micro-benchmarks for this machine's roofline: streaming read bandwidth and FMA throughput.
#pragma once

namespace nucleus {

struct MachinePeak {
  double read_gb_per_s = 0.0;  // streaming read of a buffer far larger than the caches
  double gflop_per_s = 0.0;    // f32 FMA throughput (2 FLOPs per lane per FMA), all threads, at the
                               // widest vectors the kernels use (512-bit with AVX-512)
};

// Takes about a second. `n_threads` as for inference.
MachinePeak measure_machine_peak(int n_threads);
// Its FMA part alone (MachinePeak::gflop_per_s), about 0.1 s: what kernels_bench's fma_peak reports.
double measure_fma_peak(int n_threads);

}  // namespace nucleus
