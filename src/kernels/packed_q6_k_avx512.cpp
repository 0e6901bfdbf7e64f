// Packed Q6_K row groups (kernels/packed_kquant.h) against Q8_K activations with AVX-512 VNNI.
//
// Register lane r is row 16·g + r throughout. Per block and lane k (0..7) of llama.cpp's AVX2 order:
// Σ over the 8 runs of scale · (products of the unsigned values q + 32 at positions 4k..4k+3), each
// run's scale being that of its first 16 values for k < 4 and of its last 16 for k ≥ 4 — VPMADDUBSW
// against 4 broadcast activation bytes and VPDPWSSD with the scale in both halves of the row's lane —
// minus 32 · (scale 2k · Σx of values 32k..32k+15 + scale 2k+1 · Σx of 32k+16..32k+31), as
// dot_scalar.cpp subtracts it. Then lane k's float accumulator gets fma(x.d · w.d, lane) and the
// lanes are reduced in the same order, so every row's result is the row-major kernels' bits.
#include <immintrin.h>

#include "kernels/packed_kquant.h"
#include "kernels/packed_lanes_avx512.h"

namespace nucleus {

namespace {

// low | (high & 0x30): a value's low 4 bits (already alone in the byte) and its top 2 bits.
NUCLEUS_VNNI512 inline __m512i six_bits(__m512i low, __m512i high_shifted) {
  return _mm512_ternarylogic_epi32(low, high_shifted, _mm512_set1_epi8(0x30), 0xF8);
}

// As in the Q4_K kernel: asking two blocks ahead keeps one core's stream going, a few lines at each
// lane step, into L2.
constexpr size_t kPrefetchBlocks = 2;

template <int N>
NUCLEUS_VNNI512 void q6_K_group(const uint8_t* group, int64_t n_blocks, const BlockQ8_K* const* x, float* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i pair_index = row_byte_pair_index(1);  // signed scales: shifted down below
  __m512 acc[N][8];
  for (int t = 0; t < N; ++t)
    for (int k = 0; k < 8; ++k) acc[t][k] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = group + static_cast<size_t>(b) * kPackedQ6KBlockBytes;
    __m512i scale[16];
    for (int j = 0; j < 16; ++j) {
      const __m128i row_scales = _mm_load_si128(reinterpret_cast<const __m128i*>(block + kPackedQ6KScalesOffset + 16 * j));
      scale[j] = _mm512_srai_epi16(_mm512_shuffle_epi8(_mm512_broadcast_i32x4(row_scales), pair_index), 8);
    }
    const __m512 wd = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kPackedQ6KDOffset)));
    for (int k = 0; k < 8; ++k) {
      prefetch_block_slice<kPackedQ6KBlockBytes>(block + kPrefetchBlocks * kPackedQ6KBlockBytes, k);
      const int second = k >= 4 ? 1 : 0;  // which 16 values of each run lane k falls in
      __m512i lanes[N];
      for (int t = 0; t < N; ++t) lanes[t] = _mm512_setzero_si512();
      for (int h = 0; h < 2; ++h) {
        const __m512i high = _mm512_load_si512(block + kPackedQ6KQhOffset + 64 * (2 * k + h));
        const __m512i l0 = _mm512_load_si512(block + 64 * (4 * k + 2 * h));
        const __m512i l1 = _mm512_load_si512(block + 64 * (4 * k + 2 * h + 1));
        __m512i v[4];
        v[0] = six_bits(_mm512_and_si512(l0, low4), _mm512_slli_epi16(high, 4));
        v[1] = six_bits(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low4), _mm512_slli_epi16(high, 2));
        v[2] = six_bits(_mm512_and_si512(l1, low4), high);
        v[3] = six_bits(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low4), _mm512_srli_epi16(high, 2));
        for (int r = 0; r < 4; ++r) {
          const int run = 4 * h + r;
          for (int t = 0; t < N; ++t)
            lanes[t] = _mm512_dpwssd_epi32(lanes[t], _mm512_maddubs_epi16(v[r], broadcast4(x[t][b].qs + 32 * run + 4 * k)),
                                           scale[2 * run + second]);
        }
      }
      // Row r's (scale 2k, scale 2k + 1) as a 16-bit pair, against the pair of 16-value sums.
      const __m512i run_scales = _mm512_mask_blend_epi16(0xAAAAAAAA, scale[2 * k], scale[2 * k + 1]);
      for (int t = 0; t < N; ++t) {
        const __m512i offset = _mm512_madd_epi16(run_scales, broadcast4(x[t][b].bsums + 2 * k));
        lanes[t] = _mm512_sub_epi32(lanes[t], _mm512_slli_epi32(offset, 5));
        acc[t][k] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(x[t][b].d), wd), _mm512_cvtepi32_ps(lanes[t]), acc[t][k]);
      }
    }
  }
  for (int t = 0; t < N; ++t) {
    // ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
    const __m512 even = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][4]), _mm512_add_ps(acc[t][2], acc[t][6]));
    const __m512 odd = _mm512_add_ps(_mm512_add_ps(acc[t][1], acc[t][5]), _mm512_add_ps(acc[t][3], acc[t][7]));
    _mm512_storeu_ps(out + t * kPackRows, _mm512_add_ps(even, odd));
  }
}

}  // namespace

NUCLEUS_VNNI512 void packed_q6_K_avx512(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out) {
  const uint8_t* group = w.group(g);
  while (n_tokens > 0) {
    switch (n_tokens) {
      case 1: q6_K_group<1>(group, w.n_blocks, x, out); return;
      case 2: q6_K_group<2>(group, w.n_blocks, x, out); return;
      case 3: q6_K_group<3>(group, w.n_blocks, x, out); return;
      case 4: q6_K_group<4>(group, w.n_blocks, x, out); return;
      case 5: q6_K_group<5>(group, w.n_blocks, x, out); return;
      case 6: q6_K_group<6>(group, w.n_blocks, x, out); return;
      case 7: q6_K_group<7>(group, w.n_blocks, x, out); return;
      default: q6_K_group<8>(group, w.n_blocks, x, out); break;
    }
    x += 8, out += 8 * kPackRows, n_tokens -= 8;
  }
}

}  // namespace nucleus
