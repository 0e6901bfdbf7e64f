// Two K-quant rows × up to four tokens with AVX-512 VNNI (kernels/kquant_tile.h).
//
// Each row is unpacked block by block into the prepared layout (below) — once for many token
// groups (prepare + prepared kernel), or on the fly by the direct kernel. For every type, chunk c
// (0..3) of a block is the 64 values meeting activations 64c..64c+63, as unsigned bytes: two
// 32-value runs side by side, so lane j of the first run and lane 8 + j of the second cover the
// same positions of their runs. Chunks pair up as (0, 1) and (2, 3); each pair has 16 multipliers,
// lane j's being (scale of its sub-block in the first chunk, scale in the second) as 16-bit halves.
//
// Integer part, per chunk pair: one VPDPBUSD per chunk gives 16 lanes of four unscaled products
// (|sum| ≤ 4 · 63 · 128 = 32256 < 2^15 for every type, so each fits 16 bits); the second chunk's
// lanes shifted into the high halves of the first's make 16 pairs, and VPDPWSSD against the
// multipliers adds scale_a · sum_a + scale_b · sum_b to each lane: the same exact int32 lanes as
// the single-token kernels (integer sums in any order), in three multiplies per 128 values where
// VPMADDUBSW + VPDPWSSD per chunk take four. With the activations' quants loaded 64-byte aligned
// (KQuantTileActivations::qs) this took the tile from 63 to 47 cycles per block on Zen 5; neither
// change alone measured faster.
//
// Float part, per block: the 16 lanes of a (row, token) fold to the AVX2 kernels' 8 lanes (j + 8j),
// two tokens' 8 lanes share one register (Q4_K: each token's 8 lanes summed into all 8, its order
// being one integer per block), convert and one fused multiply-add with [d_x·d_w ×8 of each token];
// the mins (Q4_K, Q5_K) of four tokens share one VPMADDWD and one fused multiply-add.
// All eight d_x·d_w and eight d_x·dmin products of a block come from one multiply (the same
// products the single-token kernels form one by one). Lane for lane these are the single-token
// kernels' float operations (dot_x86.inc), so every result is the same bits.
#include <immintrin.h>

#include <cstring>

#include "kernels/horizontal_sum_x86.h"
#include "kernels/kquant_lanes_x86.h"
#include "kernels/kquant_tile.h"
#include "kernels/kquant_values_avx512.h"

namespace nucleus {

void fill_kquant_tile_activations(const BlockQ8_K* x, int64_t n_tokens, int64_t n_blocks, int64_t padded_tokens,
                                  int8_t* qs, int16_t* sub_sums, float* d) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockQ8_K& block = x[t * n_blocks + b];
      std::memcpy(qs + (t * n_blocks + b) * kQK_K, block.qs, kQK_K);
      int16_t* s = sub_sums + (b * padded_tokens + t) * 8;
      for (int j = 0; j < 8; ++j) s[j] = static_cast<int16_t>(block.bsums[2 * j] + block.bsums[2 * j + 1]);
      d[b * padded_tokens + t] = block.d;
    }
  }
}

namespace {

enum class KType { Q4, Q5, Q6 };

// The prepared layout of one block of one row (kKQuantPreparedBlockBytes):
constexpr size_t kValues = 0;          // [4 chunks][64] unsigned values
constexpr size_t kMultipliers = 256;   // [2 chunk pairs][16 lanes] int32: (scale in chunk 2p, scale in chunk 2p + 1)
constexpr size_t kMinsOrScales = 384;  // 32 bytes: Q4_K/Q5_K the 8 mins, Q6_K the 16 scales, as int16
constexpr size_t kSuperScales = 416;   // float d, dmin
static_assert(kSuperScales + 8 <= kKQuantPreparedBlockBytes && kKQuantPreparedBlockBytes % 64 == 0);

// Lane j of chunks a and b: (scale_a, scale_b) as the low and high 16 bits, from each chunk's
// per-lane scale (a value < 64 in the low 16 bits of each int32 lane).
NUCLEUS_VNNI512 inline __m512i pair_multipliers(__m512i scale_a, __m512i scale_b) {
  return _mm512_mask_blend_epi16(0xAAAAAAAA, scale_a, _mm512_slli_epi32(scale_b, 16));
}

template <KType T>
NUCLEUS_VNNI512 void prepare_block(const void* row, int64_t b, uint8_t* out) {
  float* super = reinterpret_cast<float*>(out + kSuperScales);
  __m512i scale[4];  // per chunk, each lane's sub-block scale
  if constexpr (T == KType::Q6) {
    const BlockQ6_K& w = static_cast<const BlockQ6_K*>(row)[b];
    const __m128i scales8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales));
    const __m512i sc = _mm512_cvtepi8_epi32(scales8);
    for (int half = 0; half < 2; ++half) {
      const __m512i ql = _mm512_loadu_si512(w.ql + 64 * half);
      const __m512i qh = both_halves(w.qh + 32 * half);
      for (int pair = 0; pair < 2; ++pair) {
        const int chunk = 2 * half + pair;  // activations 128·half + 64·pair = 64·chunk
        _mm512_store_si512(out + kValues + 64 * chunk, q6k_values(ql, qh, pair));
        scale[chunk] = _mm512_permutexvar_epi32(q6k_scale_index(half, pair), sc);
      }
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + kMinsOrScales), _mm256_cvtepi8_epi16(scales8));
    super[0] = half_to_float(w.d);
    super[1] = 0.0f;
  } else {
    const uint8_t *scales_packed, *qs, *qh = nullptr;
    uint16_t d, dmin;
    if constexpr (T == KType::Q5) {
      const BlockQ5_K& w = static_cast<const BlockQ5_K*>(row)[b];
      scales_packed = w.scales, qs = w.qs, qh = w.qh, d = w.d, dmin = w.dmin;
    } else {
      const BlockQ4_K& w = static_cast<const BlockQ4_K*>(row)[b];
      scales_packed = w.scales, qs = w.qs, d = w.d, dmin = w.dmin;
    }
    uint32_t unpacked[4];
    q4k_unpack_scales(scales_packed, unpacked);
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(unpacked)));
    __m512i qh_both = _mm512_setzero_si512();
    if constexpr (T == KType::Q5) qh_both = both_halves(qh);
    for (int chunk = 0; chunk < 4; ++chunk) {
      __m512i q;
      if constexpr (T == KType::Q5) q = q5k_values(qs + 32 * chunk, qh_both, chunk);
      else q = q4k_values(qs + 32 * chunk);
      _mm512_store_si512(out + kValues + 64 * chunk, q);
      // The low-nibble run takes sub-block scale 2c, the high-nibble run 2c + 1.
      scale[chunk] = _mm512_permutexvar_epi32(halves_epi32(2 * chunk, 2 * chunk + 1), sc);
    }
    const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(unpacked + 2)));
    _mm_store_si128(reinterpret_cast<__m128i*>(out + kMinsOrScales), mins);
    super[0] = half_to_float(d);
    super[1] = half_to_float(dmin);
  }
  for (int pair = 0; pair < 2; ++pair)
    _mm512_store_si512(out + kMultipliers + 64 * pair, pair_multipliers(scale[2 * pair], scale[2 * pair + 1]));
}

template <KType T>
NUCLEUS_VNNI512 void prepare_row(const void* row, int64_t n_blocks, uint8_t* prepared) {
  for (int64_t b = 0; b < n_blocks; ++b) prepare_block<T>(row, b, prepared + b * kKQuantPreparedBlockBytes);
}

// lanes + scale_a · (qa · xa) + scale_b · (qb · xb), lane by lane over two chunks (the header).
NUCLEUS_VNNI512 inline __m512i add_paired_dots(__m512i lanes, __m512i qa, __m512i xa, __m512i qb, __m512i xb,
                                               __m512i multipliers) {
  const __m512i sum_a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qa, xa);
  const __m512i sum_b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qb, xb);
  const __m512i pairs = _mm512_mask_blend_epi16(0xAAAAAAAA, sum_a, _mm512_slli_epi32(sum_b, 16));
  return _mm512_dpwssd_epi32(lanes, pairs, multipliers);
}

// [a's lanes j + (8 + j) | b's lanes j + (8 + j)], j < 8: two tokens' lanes in the AVX2 order.
NUCLEUS_VNNI512 inline __m512i fold_pair(__m512i a, __m512i b) {
  const __m512i low = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i high = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2));
  return _mm512_add_epi32(low, high);
}

// Q4_K's order (dot_scalar.cpp): every lane of each 256-bit half gets the sum of the half's 8 lanes.
NUCLEUS_VNNI512 inline __m512i sum_within_halves(__m512i v) {
  v = _mm512_add_epi32(v, _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
  return _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
}

// Two rows against tokens t0 .. t0 + N − 1. kDirect: rows are stored rows, each block unpacked on
// the fly; otherwise rows are prepared ones.
// Results: y[t · y_stride + r] for r < n_rows (1 or 2), t < N.
template <KType T, int N, bool kDirect>
NUCLEUS_VNNI512 inline void tile(const void* row0, const void* row1, const KQuantTileActivations& x, int64_t t0, float* y,
                                 int64_t y_stride, int n_rows) {
  constexpr int kPairs = (N + 1) / 2;
  const int64_t n_blocks = x.n_blocks;
  const void* rows[2] = {row0, row1};
  const BlockQ8_K* xb[N];
  const int8_t* xq[N];  // token t's quants of block b at xq[t] + 256 b
  for (int t = 0; t < N; ++t) xb[t] = x.blocks + (t0 + t) * n_blocks, xq[t] = x.qs + (t0 + t) * n_blocks * kQK_K;
  __m512 acc[2][kPairs], acc_m[2];
  for (int r = 0; r < 2; ++r) {
    acc_m[r] = _mm512_setzero_ps();
    for (int p = 0; p < kPairs; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  // [d0 dmin0 d1 dmin1] → [d0 ×4, d1 ×4, dmin0 ×4, dmin1 ×4]; four tokens' lanes by quarters.
  const __m512i super_index = _mm512_set_epi32(3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0);
  const __m512i quad_index = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  alignas(64) uint8_t buffer[kDirect ? 2 * kKQuantPreparedBlockBytes : 64];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* w[2];
    for (int r = 0; r < 2; ++r) {
      if constexpr (kDirect) {
        prepare_block<T>(rows[r], b, buffer + r * kKQuantPreparedBlockBytes);
        w[r] = buffer + r * kKQuantPreparedBlockBytes;
      } else {
        w[r] = static_cast<const uint8_t*>(rows[r]) + b * kKQuantPreparedBlockBytes;
      }
    }
    __m512i lanes[2][N];
    for (int r = 0; r < 2; ++r)
      for (int t = 0; t < N; ++t) lanes[r][t] = _mm512_setzero_si512();
    for (int pair = 0; pair < 2; ++pair) {
      __m512i qa[2], qb[2], s[2];
      for (int r = 0; r < 2; ++r) {
        qa[r] = _mm512_load_si512(w[r] + kValues + 128 * pair);
        qb[r] = _mm512_load_si512(w[r] + kValues + 128 * pair + 64);
        s[r] = _mm512_load_si512(w[r] + kMultipliers + 64 * pair);
      }
      for (int t = 0; t < N; ++t) {
        const __m512i xa = _mm512_load_si512(xq[t] + b * kQK_K + 128 * pair);
        const __m512i xb2 = _mm512_load_si512(xq[t] + b * kQK_K + 128 * pair + 64);
        for (int r = 0; r < 2; ++r) lanes[r][t] = add_paired_dots(lanes[r][t], qa[r], xa, qb[r], xb2, s[r]);
      }
    }
    // products lane 4r + t = d_x(t) · d(row r), lane 8 + 4r + t = d_x(t) · dmin(row r).
    const __m512 dx = _mm512_broadcast_f32x4(_mm_loadu_ps(x.d + b * x.padded_tokens + t0));
    const __m128 super = _mm_castpd_ps(_mm_loadh_pd(_mm_load_sd(reinterpret_cast<const double*>(w[0] + kSuperScales)),
                                                    reinterpret_cast<const double*>(w[1] + kSuperScales)));  // d0 dmin0 d1 dmin1
    const __m512 products = _mm512_mul_ps(dx, _mm512_permutexvar_ps(super_index, _mm512_castps128_ps512(super)));
    for (int p = 0; p < kPairs; ++p) {
      const bool second = 2 * p + 1 < N;
      __m512i bsums;
      if constexpr (T == KType::Q6) {
        // Q6_K's values are unsigned (q + 32): subtract 32 · scale · Σx per lane, two tokens at once.
        const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[2 * p][b].bsums));
        const __m256i next = second ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[(2 * p + 1) % N][b].bsums))
                                    : _mm256_setzero_si256();
        bsums = _mm512_inserti64x4(_mm512_castsi256_si512(first), next, 1);
      }
      for (int r = 0; r < 2; ++r) {
        __m512i v = fold_pair(lanes[r][2 * p], second ? lanes[r][(2 * p + 1) % N] : _mm512_setzero_si512());
        if constexpr (T == KType::Q4) v = sum_within_halves(v);
        if constexpr (T == KType::Q6) {
          const __m512i s16 = _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(w[r] + kMinsOrScales)));
          v = _mm512_sub_epi32(v, _mm512_slli_epi32(_mm512_madd_epi16(bsums, s16), 5));
        }
        const __m512 d_pair = _mm512_permutexvar_ps(halves_epi32(4 * r + 2 * p, 4 * r + 2 * p + 1), products);
        acc[r][p] = _mm512_fmadd_ps(d_pair, _mm512_cvtepi32_ps(v), acc[r][p]);
      }
    }
    if constexpr (T != KType::Q6) {
      // Mins of four tokens (128-bit quarter t): lane i = m[2i]·S[2i] + m[2i+1]·S[2i+1].
      const __m512i sub_sums = _mm512_loadu_si512(x.sub_sums + (b * x.padded_tokens + t0) * 8);
      for (int r = 0; r < 2; ++r) {
        const __m512i mins = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(w[r] + kMinsOrScales)));
        __m512i m = _mm512_madd_epi16(sub_sums, mins);
        // Each token's four lanes added before converting.
        m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
        m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));
        // −(d_x · dmin) · m + acc: the single-token kernels' fma(d_x · (−dmin), m, acc), the same bits.
        const __m512 d_quad = _mm512_permutexvar_ps(_mm512_add_epi32(quad_index, _mm512_set1_epi32(8 + 4 * r)), products);
        acc_m[r] = _mm512_fnmadd_ps(d_quad, _mm512_cvtepi32_ps(m), acc_m[r]);
      }
    }
  }
  for (int r = 0; r < n_rows; ++r) {
    alignas(64) float lanes8[kPairs][16], mins[16];
    _mm512_store_ps(mins, acc_m[r]);
    for (int p = 0; p < kPairs; ++p) _mm512_store_ps(lanes8[p], acc[r][p]);
    for (int t = 0; t < N; ++t) {
      float sum = T == KType::Q4 ? lanes8[t / 2][8 * (t % 2)] : horizontal_sum(_mm256_load_ps(lanes8[t / 2] + 8 * (t % 2)));
      if constexpr (T != KType::Q6) sum += mins[4 * t];
      y[t * y_stride + r] = sum;
    }
  }
}

template <KType T, int N>
NUCLEUS_VNNI512 void prepared_rows(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const KQuantTileActivations& x,
                                   int64_t t0, float* y, int64_t y_stride) {
  for (int64_t r = 0; r < n_rows; r += 2) {
    const uint8_t* row0 = rows + static_cast<size_t>(r) * row_bytes;
    const bool pair = r + 1 < n_rows;
    tile<T, N, false>(row0, pair ? row0 + row_bytes : row0, x, t0, y + r, y_stride, pair ? 2 : 1);
  }
}

template <KType T>
KQuantTileKernels kernels_for() {
  KQuantTileKernels k;
  k.direct = [](const void* row0, const void* row1, const KQuantTileActivations& x, int64_t t0, int n_tokens, float* out) {
    float y[kKQuantTileTokens * 2];  // y[2j + i], then out[i · kKQuantTileTokens + j]
    switch (n_tokens) {
      case 1: tile<T, 1, true>(row0, row1, x, t0, y, 2, 2); break;
      case 2: tile<T, 2, true>(row0, row1, x, t0, y, 2, 2); break;
      case 3: tile<T, 3, true>(row0, row1, x, t0, y, 2, 2); break;
      default: tile<T, 4, true>(row0, row1, x, t0, y, 2, 2); break;
    }
    for (int j = 0; j < n_tokens; ++j) out[j] = y[2 * j], out[kKQuantTileTokens + j] = y[2 * j + 1];
  };
  k.prepare = [](const void* row, int64_t n_blocks, uint8_t* prepared) { prepare_row<T>(row, n_blocks, prepared); };
  k.prepared = [](const uint8_t* rows, size_t row_bytes, int64_t n_rows, const KQuantTileActivations& x, int64_t t0,
                  int n_tokens, float* y, int64_t y_stride) {
    switch (n_tokens) {
      case 1: return prepared_rows<T, 1>(rows, row_bytes, n_rows, x, t0, y, y_stride);
      case 2: return prepared_rows<T, 2>(rows, row_bytes, n_rows, x, t0, y, y_stride);
      case 3: return prepared_rows<T, 3>(rows, row_bytes, n_rows, x, t0, y, y_stride);
      default: return prepared_rows<T, 4>(rows, row_bytes, n_rows, x, t0, y, y_stride);
    }
  };
  return k;
}

}  // namespace

KQuantTileKernels kquant_tile_q4_K_avx512() { return kernels_for<KType::Q4>(); }
KQuantTileKernels kquant_tile_q5_K_avx512() { return kernels_for<KType::Q5>(); }
KQuantTileKernels kquant_tile_q6_K_avx512() { return kernels_for<KType::Q6>(); }

}  // namespace nucleus
