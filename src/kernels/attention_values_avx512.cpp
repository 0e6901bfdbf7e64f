#include "kernels/attention_values_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/ggml_order.h"

#define NUCLEUS_AVX512_VALUES __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

namespace nucleus {
namespace {

NUCLEUS_AVX512_VALUES inline __m512 load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
NUCLEUS_AVX512_VALUES inline __m512 load16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));  // f16 widened exactly
}

// rows[p − first] is value row p (see attention_over); cells of a chunk outside
// first..n_positions−1 add weight 0 · a zero row, as in the 8-wide version.
template <typename T>
NUCLEUS_AVX512_VALUES void weighted_values_impl(const AttentionArgs& a, const T* const* rows, float* fold) {
  const int64_t first = a.first_position, n_pos = a.n_positions - first;
  const int64_t chunk_begin = first / kGgmlDotLanes * kGgmlDotLanes;
  alignas(64) const T zero_row[64] = {};
  for (int64_t d0 = 0; d0 < a.head_dim; d0 += 64) {
    const int64_t width = std::min<int64_t>(64, a.head_dim - d0);
    __mmask16 mask[4];
    for (int v = 0; v < 4; ++v) {
      const int64_t m = std::clamp<int64_t>(width - 16 * v, 0, 16);
      mask[v] = static_cast<__mmask16>((1u << m) - 1u);
    }
    auto lanes_of = [&](auto full, int64_t l, int64_t h) {
      constexpr bool kFull = decltype(full)::value;
      const float* weights = a.scores + h * n_pos;
      __m512 acc[4][4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[j][v] = _mm512_setzero_ps();
      auto add_chunk = [&](int64_t chunk, auto checked) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int64_t p = chunk + l + 16 * j;
          const bool inside = !decltype(checked)::value || (p >= first && p < a.n_positions);
          const T* row = inside ? rows[p - first] + d0 : zero_row;
          const __m512 w = _mm512_set1_ps(inside ? weights[p - first] : 0.0f);
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v) {
            if constexpr (kFull) acc[j][v] = _mm512_fmadd_ps(w, load16(row + 16 * v, 0xFFFF), acc[j][v]);
            else acc[j][v] = _mm512_fmadd_ps(w, load16(row + 16 * v, mask[v]), acc[j][v]);
          }
        }
      };
      for (int64_t chunk = chunk_begin; chunk < a.n_positions; chunk += kGgmlDotLanes) {
        if (chunk >= first && chunk + kGgmlDotLanes <= a.n_positions) add_chunk(chunk, std::false_type{});
        else add_chunk(chunk, std::true_type{});
      }
      float* c = fold + (h * 16 + l) * 64;
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v)
        _mm512_storeu_ps(c + 16 * v, _mm512_add_ps(_mm512_add_ps(acc[0][v], acc[2][v]), _mm512_add_ps(acc[1][v], acc[3][v])));
    };
    for (int64_t l = 0; l < 16; ++l)
      for (int64_t h = 0; h < a.n_q; ++h) {
        if (width == 64) lanes_of(std::true_type{}, l, h);
        else lanes_of(std::false_type{}, l, h);
      }
    for (int64_t h = 0; h < a.n_q; ++h) {
      const float* c = fold + h * 16 * 64;
      float* out = a.out + h * a.head_dim + d0;
      for (int v = 0; v < 4 && 16 * v < width; ++v) {
        const int64_t at = 16 * v;
        __m512 t3[8], t6[4];
        for (int i = 0; i < 8; ++i) t3[i] = _mm512_add_ps(_mm512_loadu_ps(c + (i + 8) * 64 + at), _mm512_loadu_ps(c + i * 64 + at));
        for (int i = 0; i < 4; ++i) t6[i] = _mm512_add_ps(t3[i + 4], t3[i]);
        const __m512 result = _mm512_add_ps(_mm512_add_ps(t6[0], t6[2]), _mm512_add_ps(t6[1], t6[3]));
        _mm512_mask_storeu_ps(out + at, mask[v], result);
      }
    }
  }
}

}  // namespace

void weighted_values_avx512(const AttentionArgs& a, const float* const* rows, float* fold) { weighted_values_impl(a, rows, fold); }
void weighted_values_avx512(const AttentionArgs& a, const uint16_t* const* rows, float* fold) { weighted_values_impl(a, rows, fold); }

}  // namespace nucleus
