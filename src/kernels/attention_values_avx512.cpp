#include "kernels/attention_values_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/ggml_order.h"

#define NUCLEUS_AVX512_VALUES __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

namespace nucleus {
namespace {

NUCLEUS_AVX512_VALUES inline __m512 load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
NUCLEUS_AVX512_VALUES inline __m512 load16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));  // f16 widened exactly
}
NUCLEUS_AVX512_VALUES inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
NUCLEUS_AVX512_VALUES inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// rows[p − first] is value row p (see attention_over); cells of a chunk outside
// first..n_positions−1, which the 8-wide version adds as weight 0 · a zero row, are skipped.
//
// The rows of one lane group l (positions l, l + 16, l + 32, ... of every chunk) are first gathered,
// widened to f32, into a contiguous buffer that every head of the group then reads: in the cache's
// pool those rows sit 16 positions apart, a power-of-two stride that maps them all to the same few
// L1 sets (with a 1 KiB row, 16 rows 16 KiB apart evict each other), and f16 rows are widened once
// instead of once per head. Widening is exact, so the products are those of the rows themselves.
template <typename T>
NUCLEUS_AVX512_VALUES void weighted_values_impl(const AttentionArgs& a, const T* const* rows, float* fold) {
  const int64_t first = a.first_position, n_pos = a.n_positions - first;
  const int64_t chunk_begin = first / kGgmlDotLanes * kGgmlDotLanes;
  const int64_t n_chunks = (a.n_positions - chunk_begin + kGgmlDotLanes - 1) / kGgmlDotLanes;
  std::vector<float> own;  // only when the caller gives no scratch
  float* gathered = a.gather;  // [chunk][j][64] the lane group's rows
  if (!gathered) {
    own.resize(static_cast<size_t>(attention_gather_floats(a.n_positions)));
    gathered = own.data();
  }
  for (int64_t d0 = 0; d0 < a.head_dim; d0 += 64) {
    const int64_t width = std::min<int64_t>(64, a.head_dim - d0);
    __mmask16 mask[4];
    for (int v = 0; v < 4; ++v) {
      const int64_t m = std::clamp<int64_t>(width - 16 * v, 0, 16);
      mask[v] = static_cast<__mmask16>((1u << m) - 1u);
    }
    auto lanes_of = [&](int64_t l, int64_t h) {
      const float* weights = a.scores + h * n_pos;
      __m512 acc[4][4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[j][v] = _mm512_setzero_ps();
      auto add_chunk = [&](int64_t c, auto checked) {
        const int64_t chunk = chunk_begin + c * kGgmlDotLanes;
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int64_t p = chunk + l + 16 * j;
          // A masked cell would add 0 · a zero row, leaving the sum as it is (a sum that starts at
          // +0 is never −0 under round-to-nearest), so it is skipped: at 66 positions the last chunk
          // holds 2 of its 64.
          if (decltype(checked)::value && (p < first || p >= a.n_positions)) continue;
          const float* row = gathered + (c * 4 + j) * 64;
          const __m512 w = _mm512_set1_ps(weights[p - first]);
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v) acc[j][v] = _mm512_fmadd_ps(w, _mm512_loadu_ps(row + 16 * v), acc[j][v]);
        }
      };
      for (int64_t c = 0; c < n_chunks; ++c) {
        const int64_t chunk = chunk_begin + c * kGgmlDotLanes;
        if (chunk >= first && chunk + kGgmlDotLanes <= a.n_positions) add_chunk(c, std::false_type{});
        else add_chunk(c, std::true_type{});  // the first or the last chunk: masked cells
      }
      float* out = fold + (h * 16 + l) * 64;
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v)
        _mm512_storeu_ps(out + 16 * v, _mm512_add_ps(_mm512_add_ps(acc[0][v], acc[2][v]), _mm512_add_ps(acc[1][v], acc[3][v])));
    };
    for (int64_t l = 0; l < 16; ++l) {
      for (int64_t c = 0; c < n_chunks; ++c)  // gather (the tail of head_dim as zeros); masked cells are never read
        for (int j = 0; j < 4; ++j) {
          const int64_t p = chunk_begin + c * kGgmlDotLanes + l + 16 * j;
          if (p < first || p >= a.n_positions) continue;
          float* dst = gathered + (c * 4 + j) * 64;
          for (int v = 0; v < 4; ++v) _mm512_storeu_ps(dst + 16 * v, load16(rows[p - first] + d0 + 16 * v, mask[v]));
        }
      for (int64_t h = 0; h < a.n_q; ++h) lanes_of(l, h);
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

// [A's ggml_tree16 first level (v[i + 8] + v[i], 8 lanes) | B's]: lanes 0..7 position a, 8..15 b.
NUCLEUS_AVX512_VALUES inline __m512 tree_level1(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)), _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)));
}
// Second level (t3[i + 4] + t3[i], 4 lanes) of four positions: quarter k of [x | y] = position k.
NUCLEUS_AVX512_VALUES inline __m512 tree_level2(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1)), _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0)));
}
// Third level (t6[0] + t6[2], t6[1] + t6[3]): quarter k = [x's position k: both, y's position k: both].
NUCLEUS_AVX512_VALUES inline __m512 tree_level3(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_ps(x, y, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
}
// Last level ((t6[0] + t6[2]) + (t6[1] + t6[3])): quarter k = [x's two positions, y's two].
NUCLEUS_AVX512_VALUES inline __m512 tree_level4(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
}

// ggml_dot's 64 lanes of q and one key row folded to 16: (lanes 0..15 + 32..47) + (16..31 + 48..63).
// kSteps = head_dim / 64 (a constant, so the loop unrolls and q stays in registers).
template <int kSteps, typename T>
NUCLEUS_AVX512_VALUES inline __m512 folded_lanes(const __m512* q, const T* key) {
  __m512 acc[4];
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) acc[v] = _mm512_fmadd_ps(q[v], load16(key + 16 * v), _mm512_setzero_ps());
#pragma GCC unroll 4
  for (int i = 1; i < kSteps; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[v] = _mm512_fmadd_ps(q[4 * i + v], load16(key + 64 * i + 16 * v), acc[v]);
  return _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3]));
}

template <int kSteps, typename T>
NUCLEUS_AVX512_VALUES int64_t scores_with(const AttentionArgs& a, const T* keys) {
  const int64_t first = a.first_position, n_pos = a.n_positions - first, head_dim = a.head_dim;
  // After the four levels, quarter k holds positions k, 4 + k, 8 + k, 12 + k: back to order.
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  const __m512 scale = _mm512_set1_ps(a.scale);
  int64_t p = first;
  for (; p + 16 <= a.n_positions; p += 16) {
    const T* key[16];
    for (int j = 0; j < 16; ++j) key[j] = attention_row(keys, a, p + j);
    for (int64_t h = 0; h < a.n_q; ++h) {
      __m512 q[4 * kSteps];
#pragma GCC unroll 16
      for (int v = 0; v < 4 * kSteps; ++v) q[v] = _mm512_loadu_ps(a.q + h * head_dim + 16 * v);
      __m512 level3[2];
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        __m512 level2[2];
#pragma GCC unroll 2
        for (int quad = 0; quad < 2; ++quad) {
          const int j = 8 * half + 4 * quad;
          const __m512 x = tree_level1(folded_lanes<kSteps>(q, key[j]), folded_lanes<kSteps>(q, key[j + 1]));
          const __m512 y = tree_level1(folded_lanes<kSteps>(q, key[j + 2]), folded_lanes<kSteps>(q, key[j + 3]));
          level2[quad] = tree_level2(x, y);
        }
        level3[half] = tree_level3(level2[0], level2[1]);
      }
      const __m512 dots = _mm512_permutexvar_ps(order, tree_level4(level3[0], level3[1]));
      float* out = a.scores + h * n_pos + (p - first);
      _mm512_storeu_ps(out, _mm512_mul_ps(dots, scale));
      if (a.softcap > 0.0f)
        for (int j = 0; j < 16; ++j) out[j] = softcap_score(out[j], a.softcap);
    }
  }
  return p;
}

template <typename T>
NUCLEUS_AVX512_VALUES int64_t scores_impl(const AttentionArgs& a, const T* keys) {
  switch (a.head_dim) {
    case 64: return scores_with<1>(a, keys);
    case 128: return scores_with<2>(a, keys);
    case 192: return scores_with<3>(a, keys);
    case 256: return scores_with<4>(a, keys);
    default: return a.first_position;  // other sizes: the caller's one- and four-row dots
  }
}

}  // namespace

int64_t attention_scores_avx512(const AttentionArgs& a, const float* keys) { return scores_impl(a, keys); }
int64_t attention_scores_avx512(const AttentionArgs& a, const uint16_t* keys) { return scores_impl(a, keys); }

void weighted_values_avx512(const AttentionArgs& a, const float* const* rows, float* fold) { weighted_values_impl(a, rows, fold); }
void weighted_values_avx512(const AttentionArgs& a, const uint16_t* const* rows, float* fold) { weighted_values_impl(a, rows, fold); }

}  // namespace nucleus
