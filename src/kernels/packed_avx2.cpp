// Packed row-group kernels with AVX2: a 16-row group as two halves of 8 rows per 256-bit register.
// Without VNNI the int8 products go through VPMADDUBSW, whose int16 pair sums saturate above
// 32767 — so Q8_0's unsigned quants (up to 255) are split into nibbles, each product then stays
// ≤ 15 · 127 and eight pair sums fit in int16 exactly.
#include <immintrin.h>

#include <cstring>

#include "kernels/packed_dot.h"

#define NUCLEUS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace nucleus {

namespace {

NUCLEUS_AVX2 inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Σ over the block's 8 chunks of nibble-sized unsigned quants × activations, per row, in int16
// pairs (exact: |Σ| ≤ 8 · 2 · 15 · 127 < 32768), then widened to one int32 per row.
NUCLEUS_AVX2 inline __m256i nibble_block_sum(const __m256i q[8], const __m256i xb[8]) {
  __m256i s = _mm256_maddubs_epi16(q[0], xb[0]);
  for (int c = 1; c < 8; ++c) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(q[c], xb[c]));
  return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}

template <bool kQ4, int N>
NUCLEUS_AVX2 void half_group_tokens(const PackedRows& w, int64_t g, int half, const PackedActivations& x, int64_t t0,
                                     float* out) {
  constexpr int kShift = kQ4 ? 3 : 7;
  const __m256i low = _mm256_set1_epi8(0x0f);
  const int64_t nb = x.n_blocks;
  __m256 acc[N];
  for (int t = 0; t < N; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* block = w.block_qs(g, b) + 32 * half;
    __m256i lo[8], hi[8];  // Q4_0: lo only (the nibble values); Q8_0: low and high nibbles
    if constexpr (kQ4) {
      for (int c = 0; c < 4; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * c));
        lo[c] = _mm256_and_si256(v, low);
        lo[c + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      }
    } else {
      for (int c = 0; c < 8; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * c));
        lo[c] = _mm256_and_si256(v, low);
        hi[c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.block_scales(g, b) + 8 * half)));
    for (int t = 0; t < N; ++t) {
      const int64_t i = (t0 + t) * nb + b;
      __m256i xb[8];
      for (int c = 0; c < 8; ++c) xb[c] = broadcast4(x.blocks[i].qs + 4 * c);
      __m256i sum = nibble_block_sum(lo, xb);
      if constexpr (!kQ4) sum = _mm256_add_epi32(sum, _mm256_slli_epi32(nibble_block_sum(hi, xb), 4));
      sum = _mm256_sub_epi32(sum, _mm256_set1_epi32(x.sum[i] << kShift));
      const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(x.scale[i]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), d, acc[t]);
    }
  }
  for (int t = 0; t < N; ++t) _mm256_storeu_ps(out + t * kPackRows + 8 * half, acc[t]);
}

// Q8_0 in lane order (see packed_dot.h): per 4-column chunk c, Σ over its 4 columns for 8 rows
// is exactly one int32 lane of VPMADDWD(VPMADDUBSW(nibble, x), 1); high nibbles count 16×.
template <int N>
NUCLEUS_AVX2 void q8_0_lanes_half(const PackedRows& w, int64_t g, int half, const PackedActivations& x, int64_t t0,
                                  float* out) {
  const __m256i low = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t nb = x.n_blocks;
  __m256 acc[N][8];
  for (int t = 0; t < N; ++t)
    for (int c = 0; c < 8; ++c) acc[t][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* block = w.block_qs(g, b) + 32 * half;
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.block_scales(g, b) + 8 * half)));
    for (int t = 0; t < N; ++t) {
      const int64_t i = (t0 + t) * nb + b;
      const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(x.scale[i]));
      for (int c = 0; c < 8; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * c));
        const __m256i xb = broadcast4(x.blocks[i].qs + 4 * c);
        const __m256i lo = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v, low), xb), ones);
        const __m256i hi = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), xb), ones);
        const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(lo, _mm256_slli_epi32(hi, 4)),
                                             _mm256_set1_epi32(x.chunk_bias[8 * i + c]));
        acc[t][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), d, acc[t][c]);
      }
    }
  }
  for (int t = 0; t < N; ++t) {
    const __m256 a0 = _mm256_add_ps(acc[t][0], acc[t][4]), a1 = _mm256_add_ps(acc[t][1], acc[t][5]);
    const __m256 a2 = _mm256_add_ps(acc[t][2], acc[t][6]), a3 = _mm256_add_ps(acc[t][3], acc[t][7]);
    _mm256_storeu_ps(out + t * kPackRows + 8 * half, _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3)));
  }
}

void q8_0_lanes_kernel(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  for (int t = 0; t < n; ++t)
    for (int half = 0; half < 2; ++half) q8_0_lanes_half<1>(w, g, half, x, t0 + t, out + t * kPackRows);
}

template <bool kQ4, int N>
void group_tokens(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, float* out) {
  half_group_tokens<kQ4, N>(w, g, 0, x, t0, out);
  half_group_tokens<kQ4, N>(w, g, 1, x, t0, out);
}

template <bool kQ4>
void group_kernel(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  // Four tokens at a time keep the AVX2 register file from spilling.
  for (; n >= 4; n -= 4, t0 += 4, out += 4 * kPackRows) group_tokens<kQ4, 4>(w, g, x, t0, out);
  switch (n) {
    case 1: return group_tokens<kQ4, 1>(w, g, x, t0, out);
    case 2: return group_tokens<kQ4, 2>(w, g, x, t0, out);
    case 3: return group_tokens<kQ4, 3>(w, g, x, t0, out);
    default: return;
  }
}

}  // namespace

void packed_q4_0_avx2(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  group_kernel<true>(w, g, x, t0, n, out);
}
void packed_q8_0_avx2(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  q8_0_lanes_kernel(w, g, x, t0, n, out);
}

}  // namespace nucleus
