// AVX-512 activation quantizers (kernels/quantize_activations.h), the same bytes as the scalar ones.
//
// Decode quantizes each matmul's input on one thread while the others wait: measured with
// `nucleus bench --profile` (TinyLlama-shape, 2 threads, Zen 5) the scalar quantizers took
// 0.85 ms of a 23 ms Q4_0 step and 0.9 ms of a 19 ms Q4_K_M step (one nearbyintf call per value).
//
// Why the results are equal, step by step:
//   amax — a lane-wise max of |x| in any order is the same float; VMAXPS(a, m) is the scalar
//          `a > m ? a : m` (a NaN loses in both).
//   Q8_0 — id = 127 / amax and d = amax / 127 are computed per block as in the scalar code (the same
//          expressions), each value is x · id rounded to nearest even by the conversion, which is
//          what nearbyintf does in the default rounding mode, and |x · id| ≤ 127.00002 never
//          reaches 128, so VPMOVDB's truncation to 8 bits is exact.
//   Q8_K — the signed `max` is the first value whose |x| equals amax, found by the first set bit
//          of a compare mask in order; −127 / max and the rounding as above; min(127, ·) as a
//          vector min; bsums are exact integer sums.
#include "kernels/quantize_activations.h"

#include <immintrin.h>

#include <cstring>

#include "core/fp16.h"

#define NUCLEUS_AVX512_QUANT __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))

namespace nucleus {

namespace {

NUCLEUS_AVX512_QUANT inline __m512i round_to_int(__m512 v) {
  return _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

NUCLEUS_AVX512_QUANT inline __m512 abs_ps(__m512 v) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

}  // namespace

NUCLEUS_AVX512_QUANT void quantize_q8_0_row_avx512(const float* x, int64_t k, BlockQ8_0* blocks, float* scale,
                                                   int32_t* sum, int32_t* chunk_bias) {
  for (int64_t b = 0; b < k / kQK8_0; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kQK8_0), v1 = _mm512_loadu_ps(x + b * kQK8_0 + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(abs_ps(v0), _mm512_max_ps(abs_ps(v1), _mm512_setzero_ps())));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    blocks[b].d = f32_to_f16(amax / 127.0f);
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i q0 = round_to_int(_mm512_mul_ps(v0, vid)), q1 = round_to_int(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[b].qs + 16), _mm512_cvtepi32_epi8(q1));
    // Sums of 4 consecutive quants: pairs, then pairs of pairs, within 128-bit lanes.
    const __m512i pairs0 = _mm512_add_epi32(q0, _mm512_shuffle_epi32(q0, _MM_PERM_CDAB));
    const __m512i pairs1 = _mm512_add_epi32(q1, _mm512_shuffle_epi32(q1, _MM_PERM_CDAB));
    const __m512i quads0 = _mm512_add_epi32(pairs0, _mm512_shuffle_epi32(pairs0, _MM_PERM_BADC));
    const __m512i quads1 = _mm512_add_epi32(pairs1, _mm512_shuffle_epi32(pairs1, _MM_PERM_BADC));
    // Lane 0 of each 128-bit quarter holds its chunk's sum: quarters 0..3 of q0, then of q1.
    const __m512i pick = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 28, 24, 20, 16, 12, 8, 4, 0);
    const __m256i chunks = _mm512_castsi512_si256(_mm512_permutex2var_epi32(quads0, pick, quads1));
    const __m256i bias = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(chunks, 7));  // −128 · Σ
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(chunk_bias + 8 * b), bias);
    sum[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    scale[b] = f16_to_f32(blocks[b].d);
  }
}

NUCLEUS_AVX512_QUANT void quantize_q8_K_row_avx512(const float* x, BlockQ8_K* y, int64_t k) {
  for (int64_t i = 0; i < k / kQK_K; ++i) {
    const float* xb = x + i * kQK_K;
    __m512 m = _mm512_setzero_ps();
    for (int j = 0; j < kQK_K; j += 16) m = _mm512_max_ps(abs_ps(_mm512_loadu_ps(xb + j)), m);
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    float max = 0.0f;
    const __m512 vamax = _mm512_set1_ps(amax);
    for (int j = 0; j < kQK_K; j += 16) {
      const __mmask16 hit = _mm512_cmp_ps_mask(abs_ps(_mm512_loadu_ps(xb + j)), vamax, _CMP_EQ_OQ);
      if (hit) {
        max = xb[j + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 vis = _mm512_set1_ps(iscale);
    const __m512i top = _mm512_set1_epi32(127);
    for (int j = 0; j < kQK_K; j += 16) {
      const __m512i q = _mm512_min_epi32(top, round_to_int(_mm512_mul_ps(vis, _mm512_loadu_ps(xb + j))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs + j), _mm512_cvtepi32_epi8(q));
      y[i].bsums[j / 16] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace nucleus
