// K-quant dot products with AVX-512 VNNI, bit-identical to the AVX2 and scalar tables.
//
// The integer lanes are those of llama.cpp's AVX2 kernels (dot_scalar.cpp explains why that order):
// per block, int32 lane k = Σ over the block's 32-value runs of scale · (Σ of the products at
// positions 4k..4k+3 of the run). AVX2 finds them with maddubs + madd per run; here one 512-bit
// register holds two runs side by side (64 values, in the activations' order), one VPDPBUSD gives
// all 16 four-product sums, each is multiplied by its run's scale, and at the end of the block the
// register's halves are added: lanes j and 8 + j hold the same positions of two runs. Integer sums
// are exact in any order, and the float steps per block (one fused multiply-add onto 8 float lanes,
// the mins, the final reductions) are the AVX2 kernels' own, so every result is the same bits.
#include "kernels/dot_kquant_avx512.h"

#include <immintrin.h>

#include <cstring>

#include "kernels/horizontal_sum_x86.h"
#include "kernels/kquant_lanes_x86.h"

#define NUCLEUS_VNNI512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

namespace nucleus {

namespace {

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

// Σ scale · q · x for 64 values, 16 lanes of 4 products each.
NUCLEUS_VNNI512 inline __m512i scaled_dot(__m512i q, const int8_t* x, __m512i scale) {
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, _mm512_loadu_si512(x));
  return _mm512_mullo_epi32(sums, scale);
}

// Lanes j and 8 + j added: the 8 lanes of the AVX2 order.
NUCLEUS_VNNI512 inline __m256i fold_halves(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// Q4_K (kQ5 false) and Q5_K against N activation rows; each block's values are unpacked once.
template <bool kQ5, int N>
NUCLEUS_VNNI512 void q45_K_tokens(const void* rows, const BlockQ8_K* const* x, int64_t n_blocks, float* out) {
  __m256 acc[N];
  __m128 acc_m[N];
  float summs[N];
  for (int t = 0; t < N; ++t) acc[t] = _mm256_setzero_ps(), acc_m[t] = _mm_setzero_ps(), summs[t] = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* scales_packed;
    const uint8_t* qs;
    const uint8_t* qh = nullptr;
    uint16_t d, dmin;
    if constexpr (kQ5) {
      const BlockQ5_K& w = static_cast<const BlockQ5_K*>(rows)[b];
      scales_packed = w.scales, qs = w.qs, qh = w.qh, d = w.d, dmin = w.dmin;
    } else {
      const BlockQ4_K& w = static_cast<const BlockQ4_K*>(rows)[b];
      scales_packed = w.scales, qs = w.qs, d = w.d, dmin = w.dmin;
    }
    uint32_t unpacked[4];
    q4k_unpack_scales(scales_packed, unpacked);
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(unpacked)));
    const uint8_t* mins = reinterpret_cast<const uint8_t*>(unpacked + 2);
    __m512i qh_both;
    if constexpr (kQ5) qh_both = both_halves(qh);
    __m512i lanes[N];
    for (int t = 0; t < N; ++t) lanes[t] = _mm512_setzero_si512();
    for (int chunk = 0; chunk < 4; ++chunk) {
      __m512i q;
      if constexpr (kQ5) q = q5k_values(qs + 32 * chunk, qh_both, chunk);
      else q = q4k_values(qs + 32 * chunk);
      // The low-nibble run takes sub-block scale 2c, the high-nibble run 2c + 1.
      const __m512i scale = _mm512_permutexvar_epi32(halves_epi32(2 * chunk, 2 * chunk + 1), sc);
      for (int t = 0; t < N; ++t) lanes[t] = _mm512_add_epi32(lanes[t], scaled_dot(q, x[t][b].qs + 64 * chunk, scale));
    }
    const float wd = half_to_float(d), wdmin = half_to_float(dmin);
    for (int t = 0; t < N; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(x[t][b].d * wd), _mm256_cvtepi32_ps(fold_halves(lanes[t])), acc[t]);
      const __m128i m = mins_lanes(mins, x[t][b].bsums);
      if constexpr (kQ5) {
        summs[t] = __builtin_fmaf(-x[t][b].d * wdmin, static_cast<float>(horizontal_sum_i32x4(m)), summs[t]);
      } else {
        acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(-x[t][b].d * wdmin), _mm_cvtepi32_ps(m), acc_m[t]);
      }
    }
  }
  for (int t = 0; t < N; ++t) out[t] = horizontal_sum(acc[t]) + (kQ5 ? summs[t] : horizontal_sum4(acc_m[t]));
}

// Q6_K: per half-block (128 values) the runs pair up as (0, 1) and (2, 3); run r of half h takes
// scales 8h + 2r (its first 16 values) and 8h + 2r + 1 (the next 16).
template <int N>
NUCLEUS_VNNI512 void q6_K_tokens(const BlockQ6_K* w, const BlockQ8_K* const* x, int64_t n_blocks, float* out) {
  __m256 acc[N];
  for (int t = 0; t < N; ++t) acc[t] = _mm256_setzero_ps();
  const __m512i mask4 = _mm512_set1_epi8(0x0f), mask2 = _mm512_set1_epi8(0x03);
  const __m512i quarter = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    __m512i lanes[N];
    for (int t = 0; t < N; ++t) lanes[t] = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half) {
      // Bytes 0..31: the low bits of runs 0 and 2; bytes 32..63: of runs 1 and 3.
      const __m512i ql = _mm512_loadu_si512(w[b].ql + 64 * half);
      const __m512i qh = both_halves(w[b].qh + 32 * half);
      for (int pair = 0; pair < 2; ++pair) {
        const __m512i low = pair == 0 ? _mm512_and_si512(ql, mask4) : _mm512_and_si512(_mm512_srli_epi16(ql, 4), mask4);
        const short shift = static_cast<short>(4 * pair);
        const __m512i high = _mm512_and_si512(_mm512_srlv_epi16(qh, halves_epi16(shift, static_cast<short>(shift + 2))), mask2);
        const __m512i q = _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
        const __m512i scale = _mm512_permutexvar_epi32(_mm512_add_epi32(quarter, _mm512_set1_epi32(8 * half + 4 * pair)), sc);
        for (int t = 0; t < N; ++t)
          lanes[t] = _mm512_add_epi32(lanes[t], scaled_dot(q, x[t][b].qs + 128 * half + 64 * pair, scale));
      }
    }
    const float wd = half_to_float(w[b].d);
    for (int t = 0; t < N; ++t) {
      const __m256i l = _mm256_sub_epi32(fold_halves(lanes[t]), q6k_offset_lanes(w[b].scales, x[t][b].bsums));
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(x[t][b].d * wd), _mm256_cvtepi32_ps(l), acc[t]);
    }
  }
  for (int t = 0; t < N; ++t) out[t] = horizontal_sum(acc[t]);
}

}  // namespace

NUCLEUS_VNNI512 float dot_q4_K_q8_K_avx512(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float out;
  q45_K_tokens<false, 1>(w, &x, n_blocks, &out);
  return out;
}

NUCLEUS_VNNI512 float dot_q5_K_q8_K_avx512(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float out;
  q45_K_tokens<true, 1>(w, &x, n_blocks, &out);
  return out;
}

NUCLEUS_VNNI512 float dot_q6_K_q8_K_avx512(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float out;
  q6_K_tokens<1>(w, &x, n_blocks, &out);
  return out;
}

// Up to kDotTokens = 8 tokens; register pressure grows with N, so 5..8 run as two calls, which
// changes nothing in any token's result.
NUCLEUS_VNNI512 void dotn_q4_K_q8_K_avx512(const BlockQ4_K* w, const BlockQ8_K* const* x, int n_tokens, int64_t n_blocks,
                                           float* out) {
  switch (n_tokens) {
    case 1: return q45_K_tokens<false, 1>(w, x, n_blocks, out);
    case 2: return q45_K_tokens<false, 2>(w, x, n_blocks, out);
    case 3: return q45_K_tokens<false, 3>(w, x, n_blocks, out);
    case 4: return q45_K_tokens<false, 4>(w, x, n_blocks, out);
    default:
      q45_K_tokens<false, 4>(w, x, n_blocks, out);
      return dotn_q4_K_q8_K_avx512(w, x + 4, n_tokens - 4, n_blocks, out + 4);
  }
}

NUCLEUS_VNNI512 void dotn_q6_K_q8_K_avx512(const BlockQ6_K* w, const BlockQ8_K* const* x, int n_tokens, int64_t n_blocks,
                                           float* out) {
  switch (n_tokens) {
    case 1: return q6_K_tokens<1>(w, x, n_blocks, out);
    case 2: return q6_K_tokens<2>(w, x, n_blocks, out);
    case 3: return q6_K_tokens<3>(w, x, n_blocks, out);
    case 4: return q6_K_tokens<4>(w, x, n_blocks, out);
    default:
      q6_K_tokens<4>(w, x, n_blocks, out);
      return dotn_q6_K_q8_K_avx512(w, x + 4, n_tokens - 4, n_blocks, out + 4);
  }
}

}  // namespace nucleus
