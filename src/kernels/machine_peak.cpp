#include "kernels/machine_peak.h"

#include "core/worker_pool.h"
#include "kernels/dot.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace nucleus {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The measurements run on a WorkerPool, as the forward pass does, not on OpenMP: a libgomp team
// left spinning (for ever under OMP_WAIT_POLICY=active) would take a core from the benchmark after it.
// Thread t of the pool reads the t-th contiguous share of the buffer, as it wrote it.
__attribute__((target("avx2"))) double read_bandwidth(WorkerPool& pool) {
  const size_t n = size_t{1} << 27;  // 128 Mi floats = 512 MiB, far beyond any cache
  const size_t n_threads = static_cast<size_t>(pool.n_threads()), chunks = n / 32;
  std::vector<float> buffer(n);
  auto share = [&](int64_t t) {
    return std::pair<size_t, size_t>{chunks * static_cast<size_t>(t) / n_threads * 32, chunks * (static_cast<size_t>(t) + 1) / n_threads * 32};
  };
  pool.run(pool.n_threads(), Schedule::Static, [&](int64_t t, int) {  // touch pages on the reading thread
    const auto [begin, end] = share(t);
    for (size_t i = begin; i < end; ++i) buffer[i] = static_cast<float>(i & 7);
  });
  double best = 0.0;
  for (int rep = 0; rep < 4; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> totals(n_threads, 0.0f);
    pool.run(pool.n_threads(), Schedule::Static, [&](int64_t t, int) __attribute__((target("avx2"))) {
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
      const auto [begin, end] = share(t);
      for (size_t i = begin; i < end; i += 32) {
        acc0 = _mm256_add_ps(acc0, _mm256_load_ps(buffer.data() + i));
        acc1 = _mm256_add_ps(acc1, _mm256_load_ps(buffer.data() + i + 8));
        acc2 = _mm256_add_ps(acc2, _mm256_load_ps(buffer.data() + i + 16));
        acc3 = _mm256_add_ps(acc3, _mm256_load_ps(buffer.data() + i + 24));
      }
      float lanes[8];
      _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
      for (float v : lanes) totals[static_cast<size_t>(t)] += v;
    });
    float total = 0.0f;
    for (float v : totals) total += v;
    const double s = seconds_since(start);
    if (total == -1.0f) return 0.0;  // keeps the sum alive
    best = std::max(best, static_cast<double>(n * sizeof(float)) / s / 1e9);
  }
  return best;
}

// 8 independent chains of FMAs per thread (enough to hide the latency) on vectors V of `lanes`
// floats: one thread's whole run, in a function compiled for V's instruction set (the pool's task,
// a lambda, does not inherit a target attribute; only a float crosses back).
#define NUCLEUS_FMA_CHAINS(V, lanes, fma, set1)                                   \
  {                                                                               \
    V a[8];                                                                       \
    for (int j = 0; j < 8; ++j) a[j] = set1(1.0f + 0.001f * j);                   \
    const V m = set1(0.999999f), c = set1(1e-7f);                                 \
    for (int64_t i = 0; i < kFmaIterations; ++i)                                  \
      for (int j = 0; j < 8; ++j) a[j] = fma(a[j], m, c);                         \
    for (int j = 1; j < 8; ++j) a[0] = fma(a[j], set1(1.0f), a[0]);               \
    float lanes_out[lanes];                                                       \
    __builtin_memcpy(lanes_out, &a[0], sizeof(lanes_out));                        \
    return lanes_out[0];                                                          \
  }

constexpr int64_t kFmaIterations = 20'000'000;

__attribute__((target("avx2,fma"))) float fma_chains_256() NUCLEUS_FMA_CHAINS(__m256, 8, _mm256_fmadd_ps, _mm256_set1_ps)
__attribute__((target("avx2,fma,avx512f"))) float fma_chains_512() NUCLEUS_FMA_CHAINS(__m512, 16, _mm512_fmadd_ps, _mm512_set1_ps)

// The best of 3 runs of chains() on every thread of the pool, in GFLOP/s.
double fma_throughput(WorkerPool& pool, float (*chains)(), int lanes) {
  const int n_threads = pool.n_threads();
  double best = 0.0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> sinks(static_cast<size_t>(n_threads), 0.0f);
    pool.run(n_threads, Schedule::Static, [&](int64_t t, int) { sinks[static_cast<size_t>(t)] = chains(); });
    float sink = 0.0f;
    for (float v : sinks) sink += v;
    const double s = seconds_since(start);
    if (sink == -1.0f) return 0.0;  // keeps the chains alive
    best = std::max(best, static_cast<double>(kFmaIterations) * 8 * lanes * 2 * n_threads / s / 1e9);
  }
  return best;
}

// The widest FMA the kernels use: 512-bit where the CPU has AVX-512 (the F16 tiles), else 256-bit.
double fma_throughput(int n_threads) {
  WorkerPool pool(n_threads);
  return cpu_supports(Isa::Avx512) ? fma_throughput(pool, fma_chains_512, 16) : fma_throughput(pool, fma_chains_256, 8);
}

}  // namespace

MachinePeak measure_machine_peak(int n_threads) {
  MachinePeak peak;
  WorkerPool pool(std::max(1, n_threads));
  peak.read_gb_per_s = read_bandwidth(pool);
  peak.gflop_per_s = measure_fma_peak(n_threads);
  return peak;
}

double measure_fma_peak(int n_threads) { return fma_throughput(std::max(1, n_threads)); }

}  // namespace nucleus
