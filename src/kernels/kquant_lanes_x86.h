// The pieces of the x86 K-quant dot products that every instruction set shares (dot_x86.inc for
// AVX2, dot_kquant_avx512.cpp for AVX-512 VNNI): the mins and Q6_K offset terms and the reductions
// of the orders in dot_scalar.cpp.
#pragma once

#include <immintrin.h>

#include <cstdint>

#define NUCLEUS_KQUANT_X86 __attribute__((target("avx2,fma")))

namespace nucleus {

// 4 int32 lanes of Σ mins·bsums: lane i = m[2i]·(Σx of sub-block 2i) + m[2i+1]·(Σx of sub-block 2i+1).
NUCLEUS_KQUANT_X86 inline __m128i mins_lanes(const uint8_t* m, const int16_t* bsums) {
  const __m256i q8sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums));
  const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(q8sums), _mm256_extracti128_si256(q8sums, 1));
  const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(m)));
  return _mm_madd_epi16(mins, q8s);
}

NUCLEUS_KQUANT_X86 inline int32_t horizontal_sum_i32x4(__m128i s) {
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Q6_K's values are used unsigned (q + 32): lane k subtracts 32 · (scale · Σx) of sub-blocks 2k and 2k+1.
NUCLEUS_KQUANT_X86 inline __m256i q6k_offset_lanes(const int8_t* scales, const int16_t* bsums) {
  const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  const __m256i q8sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums));
  return _mm256_slli_epi32(_mm256_madd_epi16(q8sums, s16), 5);
}

}  // namespace nucleus
