#include "kernels/machine_peak.h"

#include "kernels/dot.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace nucleus {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

__attribute__((target("avx2"))) double read_bandwidth(int n_threads) {
  const size_t n = size_t{1} << 27;  // 128 Mi floats = 512 MiB, far beyond any cache
  std::vector<float> buffer(n);
#pragma omp parallel for num_threads(n_threads) schedule(static)
  for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<float>(i & 7);  // touch pages on the reading thread
  double best = 0.0;
  for (int rep = 0; rep < 4; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    float total = 0.0f;
#pragma omp parallel num_threads(n_threads) reduction(+ : total)
    {
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
#pragma omp for schedule(static)
      for (size_t i = 0; i < n; i += 32) {
        acc0 = _mm256_add_ps(acc0, _mm256_load_ps(buffer.data() + i));
        acc1 = _mm256_add_ps(acc1, _mm256_load_ps(buffer.data() + i + 8));
        acc2 = _mm256_add_ps(acc2, _mm256_load_ps(buffer.data() + i + 16));
        acc3 = _mm256_add_ps(acc3, _mm256_load_ps(buffer.data() + i + 24));
      }
      float lanes[8];
      _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
      for (float v : lanes) total += v;
    }
    const double s = seconds_since(start);
    if (total == -1.0f) return 0.0;  // keeps the sum alive
    best = std::max(best, static_cast<double>(n * sizeof(float)) / s / 1e9);
  }
  return best;
}

// 8 independent chains of FMAs per thread (enough to hide the latency) on vectors V of `lanes` floats.
template <typename V, int lanes, typename Fma, typename Set1>
double fma_chains(int n_threads, Fma fma, Set1 set1) {
  const int64_t iterations = 20'000'000;
  double best = 0.0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    float sink = 0.0f;
#pragma omp parallel num_threads(n_threads) reduction(+ : sink)
    {
      V a[8];
      for (int j = 0; j < 8; ++j) a[j] = set1(1.0f + 0.001f * j);
      const V m = set1(0.999999f), c = set1(1e-7f);
      for (int64_t i = 0; i < iterations; ++i)
        for (int j = 0; j < 8; ++j) a[j] = fma(a[j], m, c);
      float lanes_out[lanes];
      for (int j = 1; j < 8; ++j) a[0] = fma(a[j], set1(1.0f), a[0]);
      __builtin_memcpy(lanes_out, &a[0], sizeof(lanes_out));
      sink += lanes_out[0];
    }
    const double s = seconds_since(start);
    if (sink == -1.0f) return 0.0;
    best = std::max(best, static_cast<double>(iterations) * 8 * lanes * 2 * n_threads / s / 1e9);
  }
  return best;
}

__attribute__((target("avx2,fma"))) double fma_throughput_256(int n_threads) {
  return fma_chains<__m256, 8>(
      n_threads, [](__m256 a, __m256 b, __m256 c) __attribute__((target("avx2,fma"))) { return _mm256_fmadd_ps(a, b, c); },
      [](float v) __attribute__((target("avx2,fma"))) { return _mm256_set1_ps(v); });
}

// The widest FMA the kernels use: 512-bit where the CPU has AVX-512 (the F16 tiles), else 256-bit.
__attribute__((target("avx2,fma,avx512f"))) double fma_throughput_512(int n_threads) {
  return fma_chains<__m512, 16>(
      n_threads,
      [](__m512 a, __m512 b, __m512 c) __attribute__((target("avx2,fma,avx512f"))) { return _mm512_fmadd_ps(a, b, c); },
      [](float v) __attribute__((target("avx2,fma,avx512f"))) { return _mm512_set1_ps(v); });
}

double fma_throughput(int n_threads) {
  return cpu_supports(Isa::Avx512) ? fma_throughput_512(n_threads) : fma_throughput_256(n_threads);
}

}  // namespace

MachinePeak measure_machine_peak(int n_threads) {
  MachinePeak peak;
  peak.read_gb_per_s = read_bandwidth(std::max(1, n_threads));
  peak.gflop_per_s = measure_fma_peak(n_threads);
  return peak;
}

double measure_fma_peak(int n_threads) { return fma_throughput(std::max(1, n_threads)); }

}  // namespace nucleus
