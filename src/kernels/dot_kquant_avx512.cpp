// K-quant dot products with AVX-512 VNNI, bit-identical to the AVX2 and scalar tables.
//
// The integer lanes are those of llama.cpp's AVX2 kernels (dot_scalar.cpp explains the orders):
// per block, int32 lane k = Σ over the block's 32-value runs of scale · (Σ of the products at
// positions 4k..4k+3 of the run). AVX2 finds them with maddubs + madd per run; here one 512-bit
// register holds two runs side by side (64 values, in the activations' order), one VPDPBUSD gives
// all 16 four-product sums and VPMULLD their runs' scales (one token), or VPMADDUBSW + VPDPWSSD do
// both (several tokens), and at the end of the block the register's halves are added: lanes j and
// 8 + j hold the same positions of two runs. Integer sums
// are exact in any order, and the float steps per block (Q5_K and Q6_K: one fused multiply-add onto 8
// float lanes, the mins, the final reductions; Q4_K: the block's lanes summed as integers, then one
// fused multiply-add each for the scales and the mins) are the AVX2 kernels' own, so every result is
// the same bits.
#include "kernels/dot_kquant_avx512.h"

#include <immintrin.h>

#include "kernels/horizontal_sum_x86.h"
#include "kernels/kquant_lanes_x86.h"
#include "kernels/kquant_values_avx512.h"

namespace nucleus {

namespace {

// One token: VPDPBUSD then the scale by VPMULLD (measured 3–4% faster per row than VPMADDUBSW +
// VPDPWSSD here, for one token); several tokens: VPMADDUBSW + VPDPWSSD (add_scaled_dot), whose scale
// pairs are made once per block for all of them. Both give the same exact lanes.
template <int N>
NUCLEUS_VNNI512 inline __m512i scale_multipliers(__m512i scale) {
  if constexpr (N == 1) return scale;
  else return scale_pairs(scale);
}

template <int N>
NUCLEUS_VNNI512 inline __m512i add_dot(__m512i lanes, __m512i q, __m512i x, __m512i multipliers) {
  if constexpr (N == 1) return _mm512_add_epi32(lanes, _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q, x), multipliers));
  else return add_scaled_dot(lanes, q, x, multipliers);
}

// Lanes j and 8 + j added: the 8 lanes of the AVX2 order.
NUCLEUS_VNNI512 inline __m256i fold_halves(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// Q4_K (kQ5 false) and Q5_K against N activation rows; each block's values are unpacked once.
template <bool kQ5, int N>
NUCLEUS_VNNI512 void q45_K_tokens(const void* rows, const BlockQ8_K* const* x, int64_t n_blocks, float* out) {
  __m256 acc[N];  // Q5_K: AVX2's 8 float lanes
  float acc_q4[N], summs[N];
  for (int t = 0; t < N; ++t) acc[t] = _mm256_setzero_ps(), acc_q4[t] = 0.0f, summs[t] = 0.0f;
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
    const __m512i sc = scale_multipliers<N>(_mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(unpacked))));
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
      for (int t = 0; t < N; ++t) lanes[t] = add_dot<N>(lanes[t], q, _mm512_loadu_si512(x[t][b].qs + 64 * chunk), scale);
    }
    const float wd = half_to_float(d), wdmin = half_to_float(dmin);
    for (int t = 0; t < N; ++t) {
      if constexpr (kQ5) {
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(x[t][b].d * wd), _mm256_cvtepi32_ps(fold_halves(lanes[t])), acc[t]);
      } else {  // Q4_K: the block as one integer (dot_scalar.cpp)
        acc_q4[t] = __builtin_fmaf(x[t][b].d * wd, static_cast<float>(_mm512_reduce_add_epi32(lanes[t])), acc_q4[t]);
      }
      const int32_t m = horizontal_sum_i32x4(mins_lanes(mins, x[t][b].bsums));
      summs[t] = __builtin_fmaf(-x[t][b].d * wdmin, static_cast<float>(m), summs[t]);
    }
  }
  for (int t = 0; t < N; ++t) out[t] = (kQ5 ? horizontal_sum(acc[t]) : acc_q4[t]) + summs[t];
}

// Q6_K: per half-block (128 values) the runs pair up as (0, 1) and (2, 3); run r of half h takes
// scales 8h + 2r (its first 16 values) and 8h + 2r + 1 (the next 16).
template <int N>
NUCLEUS_VNNI512 void q6_K_tokens(const BlockQ6_K* w, const BlockQ8_K* const* x, int64_t n_blocks, float* out) {
  __m256 acc[N];
  for (int t = 0; t < N; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m512i sc = scale_multipliers<N>(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales))));
    __m512i lanes[N];
    for (int t = 0; t < N; ++t) lanes[t] = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half) {
      // Bytes 0..31: the low bits of runs 0 and 2; bytes 32..63: of runs 1 and 3.
      const __m512i ql = _mm512_loadu_si512(w[b].ql + 64 * half);
      const __m512i qh = both_halves(w[b].qh + 32 * half);
      for (int pair = 0; pair < 2; ++pair) {
        const __m512i q = q6k_values(ql, qh, pair);
        const __m512i scale = _mm512_permutexvar_epi32(q6k_scale_index(half, pair), sc);
        for (int t = 0; t < N; ++t)
          lanes[t] = add_dot<N>(lanes[t], q, _mm512_loadu_si512(x[t][b].qs + 128 * half + 64 * pair), scale);
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
