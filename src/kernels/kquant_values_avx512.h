// Unpacking K-quant blocks into 512-bit registers of unsigned 8-bit values, shared by the AVX-512
// VNNI dot products (dot_kquant_avx512.cpp) and the two-row tile kernels (kquant_tile_avx512.cpp).
//
// A register holds 64 values in the activations' order: two 32-value runs side by side, so one
// VPDPBUSD (or VPMADDUBSW + VPDPWSSD) against 64 activation bytes gives 16 lanes of four products,
// lane j of the first run and lane 8 + j of the second covering the same positions of their runs.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.h"

#define NUCLEUS_VNNI512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

namespace nucleus {

NUCLEUS_VNNI512 inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// The 8 scales (bytes 0..7 of out) and 8 mins (bytes 8..15) of a Q4_K/Q5_K block, the values
// q4k_scale_min gives, four at a time. Packed layout (12 bytes as three words w0, w1, w2):
// scales 0..3 and mins 0..3 are the low 6 bits of w0 and w1; scales 4..7 are the low nibbles of
// w2 topped with the high 2 bits of w0's bytes, mins 4..7 the high nibbles of w2 topped with w1's.
inline void q4k_unpack_scales(const uint8_t* packed, uint32_t out[4]) {
  uint32_t w[3];
  std::memcpy(w, packed, sizeof(w));
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  out[0] = w[0] & kLow6;
  out[1] = (w[2] & kLow4) | (((w[0] >> 6) & kLow2) << 4);
  out[2] = w[1] & kLow6;
  out[3] = ((w[2] >> 4) & kLow4) | (((w[1] >> 6) & kLow2) << 4);
}

// A 512-bit vector of 16-bit elements: `low` in the first 256 bits, `high` in the second.
NUCLEUS_VNNI512 inline __m512i halves_epi16(short low, short high) {
  return _mm512_inserti64x4(_mm512_set1_epi16(low), _mm256_set1_epi16(high), 1);
}

// Each int32 lane s as the 16-bit pair (s, s): the multiplier with which VPDPWSSD adds
// s · (p0 + p1) for the two 16-bit sums p0, p1 of VPMADDUBSW in the lane.
NUCLEUS_VNNI512 inline __m512i scale_pairs(__m512i s) {
  return _mm512_or_si512(_mm512_and_si512(s, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(s, 16));
}

// lanes + Σ scale · q · x over 64 values: 16 lanes of four products each. VPMADDUBSW sums pairs of
// unsigned × signed products in 16 bits (at most 2 · 63 · 128 < 2^15: nothing saturates), VPDPWSSD
// multiplies both by the lane's scale and adds: exact, and two instructions where VPDPBUSD +
// VPMULLD + VPADDD take three.
NUCLEUS_VNNI512 inline __m512i add_scaled_dot(__m512i lanes, __m512i q, __m512i x, __m512i scale_pairs) {
  return _mm512_dpwssd_epi32(lanes, _mm512_maddubs_epi16(q, x), scale_pairs);
}

// Indices for _mm512_permutexvar_epi32: lanes 0..7 take element `low`, lanes 8..15 element `high`.
NUCLEUS_VNNI512 inline __m512i halves_epi32(int low, int high) {
  return _mm512_inserti64x4(_mm512_set1_epi32(low), _mm256_set1_epi32(high), 1);
}

// 32 bytes at p, in both halves of a register.
NUCLEUS_VNNI512 inline __m512i both_halves(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Chunk c of a Q4_K/Q5_K block (32 bytes of nibbles) as 64 unsigned values in the activations'
// order: the low nibbles (values 64c..64c+31), then the high ones (64c+32..64c+63).
NUCLEUS_VNNI512 inline __m512i q4k_values(const uint8_t* qs) {
  const __m512i shifted = _mm512_srlv_epi16(both_halves(qs), halves_epi16(0, 4));
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
}

// Q5_K adds each value's fifth bit: bit 2c of qh[l] for the low nibble of value l, bit 2c + 1 for
// the high one (a 16-bit shift by < 8 then a byte mask keeps each byte's own bits).
NUCLEUS_VNNI512 inline __m512i q5k_values(const uint8_t* qs, __m512i qh_both, int chunk) {
  const __m512i fifth = _mm512_and_si512(_mm512_srlv_epi16(qh_both, halves_epi16(static_cast<short>(2 * chunk),
                                                                                   static_cast<short>(2 * chunk + 1))),
                                         _mm512_set1_epi8(1));
  return _mm512_or_si512(q4k_values(qs), _mm512_slli_epi16(fifth, 4));
}

// Q6_K, per half-block h (128 values): the 32-value runs pair up as (0, 1) and (2, 3). Pair p's 64
// values (unsigned, q + 32), from ql = the half's 64 low-bit bytes and qh_both = its 32 high-bit
// bytes in both register halves: bytes 0..31 of ql hold the low bits of runs 0 and 2, 32..63 of
// runs 1 and 3.
NUCLEUS_VNNI512 inline __m512i q6k_values(__m512i ql, __m512i qh_both, int pair) {
  const __m512i mask4 = _mm512_set1_epi8(0x0f), mask2 = _mm512_set1_epi8(0x03);
  const __m512i low = pair == 0 ? _mm512_and_si512(ql, mask4) : _mm512_and_si512(_mm512_srli_epi16(ql, 4), mask4);
  const short shift = static_cast<short>(4 * pair);
  const __m512i high = _mm512_and_si512(_mm512_srlv_epi16(qh_both, halves_epi16(shift, static_cast<short>(shift + 2))), mask2);
  return _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
}

// Indices into a Q6_K block's 16 scales for pair p of half h: run r of the pair takes scales
// 8h + 2(2p + r) (its first 16 values, lanes 8r..8r+3) and 8h + 2(2p + r) + 1 (lanes 8r+4..8r+7).
NUCLEUS_VNNI512 inline __m512i q6k_scale_index(int half, int pair) {
  const __m512i quarter = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  return _mm512_add_epi32(quarter, _mm512_set1_epi32(8 * half + 4 * pair));
}

}  // namespace nucleus
