// The one 8-lane float reduction the x86 kernels end with: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) +
// (l3 + l7)), the order of llama.cpp's hsum_float_8, which its reference logits follow
// (dot_scalar.cpp's reduce_lanes is the same order in scalar code).
#pragma once

#include <immintrin.h>

namespace nucleus {

__attribute__((target("avx"))) inline float horizontal_sum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// 16 lanes: lane[i] + lane[i + 8] first (a 512-bit accumulator's two halves), then the above.
__attribute__((target("avx512f"))) inline float horizontal_sum_halves(__m512 v) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return horizontal_sum(_mm256_add_ps(_mm512_castps512_ps256(v), hi));
}

}  // namespace nucleus
