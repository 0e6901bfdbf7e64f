// One Google Benchmark per kernel, on TinyLlama-1.1B-sized rows (k = 2048, m = 5632 for matrices):
//   dot/<type>/<isa>      one stored row · one activation row (the inner loop of every matmul)
//   gemv/<type>/<isa>     a [5632 × 2048] matrix times one token, one thread — bytes/s is the weight
//                         stream rate the decode roofline is about
//   gemm/<type>/<isa>/N   the same matrix times N tokens (prefill, batched decode) — items/s counts
//                         multiply-adds, i.e. arithmetic throughput
//   gemm_l2/<type>/<isa>/N  a [256 × 2048] matrix times N tokens: in L2, so what the kernel's
//                         arithmetic allows without waiting on L3 or DRAM
//   kquant_l1/<Q4_K|Q5_K|Q6_K>/avx512/N  one packed 16-row group (19-27 KB: in L1) against N Q8_K rows
//                         quantized beforehand: the packed kernel's arithmetic alone, without the
//                         activation quantization, threads or L2 that gemm_l2 includes
//   stream/<type>/<isa>/T/N  N tokens (1, 5 as in a γ = 4 verification, or a batch of 16) through 64 such matrices
//                         in turn (~420 MB at Q4_0, out of every cache, on huge pages like a loaded
//                         model's), T threads — bytes/s is the rate the kernel streams weights from
//                         DRAM, decode's roofline without the model's other operators
//   quantize_activations/<Q8_0|Q8_K>/<isa>   one 2048-value activation row quantized (per matmul)
//   rms_norm, softmax, swiglu, rope   the per-token operators, at model sizes
//   fma_peak              one thread's FMA peak as `nucleus bench` measures it (mul_adds_per_s,
//                         multiply-adds as items/s counts them above): the gemm rates' denominator
//   gemm_share/<F16|BF16>/avx512/128  gemm_l2's 128-token rate over that peak, from pairs measured
//                         back to back (share_median, share_min, share_max)
// Every ISA this CPU supports is registered; NUCLEUS_ISA does not apply here.
//
//   cmake --build build --target benchmarks && build/bench/kernels_bench [--benchmark_filter=gemv]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "core/aligned_vector.h"
#include "core/weight_memory.h"
#include "kernels/dot.h"
#include "kernels/machine_peak.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/packed_kquant.h"
#include "kernels/quantize.h"
#include "kernels/quantize_k.h"

namespace nucleus {
namespace {

constexpr int64_t kCols = 2048, kRows = 5632;
constexpr int64_t kL2Rows = 256;  // gemm_l2: a matrix that stays in L2 (≤ 1 MiB up to F16), the arithmetic bound

std::vector<float> normal_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A [rows × kCols] matrix of random weights stored in `type`, packed where the type has a packing.
struct BenchMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
  BenchMatrix(GgmlType type, int64_t rows, WeightArena* arena = nullptr) {
    const size_t row_bytes = ggml_row_size(type, kCols);
    bytes.resize(row_bytes * static_cast<size_t>(rows));
    const auto values = normal_values(static_cast<size_t>(kCols), 1);
    for (int64_t r = 0; r < rows; ++r) quantize_row(type, values.data(), bytes.data() + r * row_bytes, kCols);
    w = WeightMatrix{};
    w.type = type;
    w.data = bytes.data();
    w.n_cols = kCols;
    w.n_rows = rows;
    w.row_bytes = row_bytes;
    pack_weights(w, 1, arena, select_dot_kernels());  // Q4_K is packed where the best table has its kernel
    if (arena && !w.packed) copy_to_weight_memory(w, arena);
  }
};

void dot(benchmark::State& state, Isa isa, GgmlType type) {
  BenchMatrix m(type, 1);
  m.w.packed.reset();  // the row-major single-row kernel
  const auto x = normal_values(kCols, 2);
  MatmulScratch scratch;
  const MatmulActivations a = prepare_activations(type, x.data(), 1, kCols, scratch);
  const DotKernels& kernels = dot_kernels_for(isa);
  for (auto _ : state) benchmark::DoNotOptimize(dot_row(kernels, m.w, 0, a, 0));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(m.w.row_bytes));
}

void matmul_tokens(benchmark::State& state, Isa isa, GgmlType type, int64_t rows) {
  const int64_t n_tokens = state.range(0);
  static std::vector<std::unique_ptr<BenchMatrix>> cache;  // one matrix per type and size, built once
  BenchMatrix* m = nullptr;
  for (auto& c : cache)
    if (c->w.type == type && c->w.n_rows == rows) m = c.get();
  if (!m) m = cache.emplace_back(std::make_unique<BenchMatrix>(type, rows)).get();
  const auto values = normal_values(static_cast<size_t>(n_tokens * kCols), 3);
  const AlignedVector<float> x(values.begin(), values.end());  // as the model's activation buffers
  std::vector<float> y(static_cast<size_t>(n_tokens * rows));
  MatmulScratch scratch;
  const DotKernels& kernels = dot_kernels_for(isa);
  for (auto _ : state) {
    matmul(kernels, m->w, x.data(), n_tokens, y.data(), 1, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(m->bytes.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n_tokens * rows * kCols);  // multiply-adds
}

void kquant_l1(benchmark::State& state, GgmlType type) {
  const int n_tokens = static_cast<int>(state.range(0));
  BenchMatrix m(type, kPackRows);
  const PackedKQuantKernel kernel = packed_kquant_kernel(dot_kernels_for(Isa::Avx512), type);
  if (!m.w.packed || !kernel) return state.SkipWithError("no packed kernel for this type");
  const int64_t n_blocks = kCols / 256;
  std::vector<BlockQ8_K> blocks(static_cast<size_t>(n_tokens * n_blocks));
  const auto values = normal_values(static_cast<size_t>(n_tokens * kCols), 3);
  const BlockQ8_K* x[kPackTokens];
  for (int t = 0; t < n_tokens; ++t) {
    quantize_activations_q8_K(values.data() + t * kCols, blocks.data() + t * n_blocks, kCols);
    x[t] = blocks.data() + t * n_blocks;
  }
  alignas(64) float out[kPackTokens * kPackRows];
  for (auto _ : state) {
    kernel(*m.w.packed, 0, x, n_tokens, out);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n_tokens * kPackRows * kCols);  // multiply-adds
}

void stream_tokens(benchmark::State& state, Isa isa, GgmlType type) {
  const int n_threads = static_cast<int>(state.range(0));
  const int64_t n_tokens = state.range(1);
  constexpr int kMatrices = 64;
  const size_t bytes_each = ggml_row_size(type, kCols) * kRows;
  WeightArena arena(bytes_each * kMatrices + (size_t{1} << 20));
  std::vector<std::unique_ptr<BenchMatrix>> matrices;
  for (int i = 0; i < kMatrices; ++i) {
    matrices.push_back(std::make_unique<BenchMatrix>(type, kRows, &arena));
    matrices.back()->bytes = {};  // only the arena copy is read
  }
  const auto x = normal_values(static_cast<size_t>(n_tokens * kCols), 3);
  std::vector<float> y(static_cast<size_t>(n_tokens * kRows));
  MatmulScratch scratch;
  const DotKernels& kernels = dot_kernels_for(isa);
  for (auto _ : state) {
    for (auto& m : matrices) matmul(kernels, m->w, x.data(), n_tokens, y.data(), n_threads, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes_each * kMatrices));
}

// One activation row quantized for the integer kernels (what every Q4_0/Q8_0 or K-quant matmul does
// first, on one thread at decode).
void quantize_activations_op(benchmark::State& state, Isa isa, GgmlType type) {
  const auto x = normal_values(kCols, 10);
  MatmulScratch scratch;
  const DotKernels& kernels = dot_kernels_for(isa);
  for (auto _ : state) benchmark::DoNotOptimize(prepare_activations(kernels, type, x.data(), 1, kCols, scratch));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kCols);
}

void rms_norm_op(benchmark::State& state) {
  const auto x = normal_values(kCols, 4), w = normal_values(kCols, 5);
  std::vector<float> out(kCols);
  for (auto _ : state) {
    rms_norm(x.data(), w.data(), out.data(), kCols, 1e-5f);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kCols);
}

void softmax_op(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto base = normal_values(static_cast<size_t>(n), 6);
  std::vector<float> x(base);
  for (auto _ : state) {
    x = base;
    softmax(x.data(), n);
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);
}

void swiglu_op(benchmark::State& state) {
  const auto gate = normal_values(kRows, 7), up = normal_values(kRows, 8);
  std::vector<float> out(kRows);
  for (auto _ : state) {
    swiglu(gate.data(), up.data(), out.data(), kRows);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRows);
}

void rope_op(benchmark::State& state) {
  auto x = normal_values(64, 9);  // one head of TinyLlama
  int64_t position = 0;
  for (auto _ : state) {
    rope(x.data(), 64, position++ % 2048, 10000.0f, false);
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 64);
}

void fma_peak(benchmark::State& state) {
  double gflop = 0;
  for (auto _ : state) gflop = std::max(gflop, measure_fma_peak(1));
  state.counters["mul_adds_per_s"] = gflop / 2 * 1e9;  // 2 FLOPs per multiply-add
}

// The F16 and BF16 GEMM's share of the FMA peak from pairs taken back to back: each iteration
// measures the peak (measure_fma_peak(1), ~70 ms) and then runs gemm_l2's matrix × 128 tokens
// for about as long; the counters are the median, lowest and highest of the per-pair shares.
// On a shared host whose speed shifts between states (this Zen 5 VM's does, for seconds at a
// time) a share from a peak and a GEMM measured minutes apart mixes states; a pair does not.
void gemm_share(benchmark::State& state, Isa isa, GgmlType type) {
  constexpr int64_t kTokens = 128;
  BenchMatrix m(type, kL2Rows);
  const auto values = normal_values(static_cast<size_t>(kTokens * kCols), 3);
  const AlignedVector<float> x(values.begin(), values.end());
  std::vector<float> y(static_cast<size_t>(kTokens * kL2Rows));
  MatmulScratch scratch;
  const DotKernels& kernels = dot_kernels_for(isa);
  std::vector<double> shares;
  for (auto _ : state) {
    const double peak = measure_fma_peak(1) / 2 * 1e9;  // multiply-adds per second
    int64_t calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    while (seconds < 0.07) {
      matmul(kernels, m.w, x.data(), kTokens, y.data(), 1, scratch);
      benchmark::DoNotOptimize(y.data());
      ++calls;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    shares.push_back(static_cast<double>(calls * kTokens * kL2Rows * kCols) / seconds / peak);
  }
  std::sort(shares.begin(), shares.end());
  state.counters["share_median"] = shares[shares.size() / 2];
  state.counters["share_min"] = shares.front();
  state.counters["share_max"] = shares.back();
}

void register_all() {
  const GgmlType types[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                            GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!cpu_supports(isa)) continue;
    for (GgmlType type : types) {
      const std::string suffix = std::string(ggml_type_name(type)) + "/" + isa_name(isa);
      benchmark::RegisterBenchmark(("dot/" + suffix).c_str(), dot, isa, type);
      if (isa == Isa::Scalar) continue;  // the scalar matmul is a reference, minutes per run
      benchmark::RegisterBenchmark(("gemv/" + suffix).c_str(), matmul_tokens, isa, type, kRows)->Arg(1)->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("gemm/" + suffix).c_str(), matmul_tokens, isa, type, kRows)
          ->Arg(2)->Arg(4)->Arg(5)->Arg(8)->Arg(16)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("gemm_l2/" + suffix).c_str(), matmul_tokens, isa, type, kL2Rows)
          ->Arg(1)->Arg(5)->Arg(8)->Arg(128)->Unit(benchmark::kMicrosecond);
      if (type != GgmlType::F32)
        benchmark::RegisterBenchmark(("stream/" + suffix).c_str(), stream_tokens, isa, type)
            ->Args({1, 1})->Args({2, 1})->Args({1, 5})->Args({2, 5})->Args({2, 16})->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
  if (cpu_supports(Isa::Avx512))
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
      benchmark::RegisterBenchmark(("kquant_l1/" + std::string(ggml_type_name(type)) + "/avx512").c_str(), kquant_l1, type)
          ->Arg(1)->Arg(5)->Arg(8)->Unit(benchmark::kMicrosecond);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!cpu_supports(isa)) continue;
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_K})
      benchmark::RegisterBenchmark(("quantize_activations/" + std::string(type == GgmlType::Q4_0 ? "Q8_0/" : "Q8_K/") +
                                    isa_name(isa)).c_str(), quantize_activations_op, isa, type);
  }
  benchmark::RegisterBenchmark("rms_norm/2048", rms_norm_op);
  benchmark::RegisterBenchmark("softmax", softmax_op)->Arg(256)->Arg(2048);
  benchmark::RegisterBenchmark("swiglu/5632", swiglu_op);
  benchmark::RegisterBenchmark("rope/head64", rope_op);
  benchmark::RegisterBenchmark("fma_peak", fma_peak)->Iterations(3)->Unit(benchmark::kMillisecond);
  if (cpu_supports(Isa::Avx512))
    for (GgmlType type : {GgmlType::F16, GgmlType::BF16})
      benchmark::RegisterBenchmark(("gemm_share/" + std::string(ggml_type_name(type)) + "/avx512/128").c_str(), gemm_share,
                                   Isa::Avx512, type)
          ->Iterations(15)->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace nucleus

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  nucleus::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
