// Packed Q4_K and Q5_K row groups (kernels/packed_kquant.h) against Q8_K activations with AVX-512 VNNI.
//
// Register lane r is row 16·g + r throughout, and each type follows its order in dot_scalar.cpp,
// so every row's result is the row-major kernels' bits:
// - Q4_K (q4_K_group): one integer per block and row. Each 32-value run's 8 lanes of 4 values are
//   chained by VPDPBUSD into one sum per row and scaled by one VPMULLD.
// - Q5_K (q5_K_group): llama.cpp's AVX2 order. Per block and lane k (0..7), the integer lane sum Σ
//   over the 8 runs of scale · (products at positions 4k..4k+3 of the run) for all 16 rows at once:
//   per pair of runs, VPDPBUSD against 4 broadcast activation bytes (each run's 4-product sum per
//   row), the two sums as one 16-bit pair, and VPDPWSSD with the two runs' scales in the halves of
//   the row's lane (run_pair_sums below); lane k's float accumulator gets fma(x.d · w.d, lane), the
//   mins fma(−x.d · w.dmin, Σ min · sub-block sum), and at the end the AVX2 reductions, across
//   registers instead of within one.
#include <immintrin.h>

#include "kernels/packed_kquant.h"
#include "kernels/packed_lanes_avx512.h"

namespace nucleus {

namespace {

// Each block asks for the block two ahead (into the next group at a group's end — a thread's groups
// are contiguous). kernels_bench stream/Q4_K/avx512, Zen 5, one token, one thread: 23.1-23.4 GB/s
// without, 25.7-28.8 one block ahead, 27.7-32.4 two, 28.8-29.4 four; two threads 39-40 without,
// 53-56 two ahead. Several tokens gain too (TinyLlama Q4_K_M, 2 threads: `bench batch --batch 4`
// 128/135 -> 160/155 tok/s; a 5-token verification pass 3.3/3.1 -> 2.4/2.4 one-token steps).
// The block's lines are asked for a few at each of its 8 lane steps, into L2 (T1), not all 36 at its
// start into L1: on Zen 4 (32 KB L1, AVX-512 on 256-bit pipes) that burst stalled the loop, and
// `stream/Q4_K/avx512/1/5` went 74 -> 36 ms, `stream/Q6_K/avx512/1/1` 50 -> 22 ms
// (docs/BENCHMARKS.md, 2026-12-07 09:00 UTC).
constexpr size_t kPrefetchBlocks = 2;

// Bit `run` of each byte of qh moved to bit 4 (the other bits are masked off by the caller).
template <int kRun>
NUCLEUS_VNNI512 inline __m512i fifth_bit_at_4(__m512i qh) {
  if constexpr (kRun < 4) return _mm512_slli_epi16(qh, 4 - kRun);
  else if constexpr (kRun == 4) return qh;
  else return _mm512_srli_epi16(qh, kRun - 4);
}

// value | (shifted & 0x10): a Q5_K value's low 4 bits and its fifth bit.
NUCLEUS_VNNI512 inline __m512i with_fifth_bit(__m512i low, __m512i shifted) {
  return _mm512_ternarylogic_epi32(low, shifted, _mm512_set1_epi8(0x10), 0xF8);
}

// The low-nibble (run 2c) and high-nibble (run 2c + 1) Q5_K values of one quant register.
template <int kC>
NUCLEUS_VNNI512 inline void run_values(const uint8_t* block, int k, __m512i qh, __m512i* lo, __m512i* hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i q = _mm512_load_si512(block + 64 * (4 * k + kC));
  *lo = with_fifth_bit(_mm512_and_si512(q, low4), fifth_bit_at_4<2 * kC>(qh));
  *hi = with_fifth_bit(_mm512_and_si512(_mm512_srli_epi16(q, 4), low4), fifth_bit_at_4<2 * kC + 1>(qh));
}

// Per row, Σ over the 8 sub-blocks of min · (Σ of the token's activations in it), exact: mins[i] holds
// each row's (min 2i, min 2i + 1) as a 16-bit pair.
NUCLEUS_VNNI512 inline __m512i mins_sum(const __m512i mins[4], const int16_t* bsums) {
  // The 8 sub-block sums as 16-bit values; 32-bit element i is the pair of sub-blocks 2i, 2i + 1.
  const __m128i sums = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums)),
                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums + 8)));
  const __m512i m01 = _mm512_add_epi32(_mm512_madd_epi16(mins[0], _mm512_broadcastd_epi32(sums)),
                                       _mm512_madd_epi16(mins[1], _mm512_broadcastd_epi32(_mm_srli_si128(sums, 4))));
  const __m512i m23 = _mm512_add_epi32(_mm512_madd_epi16(mins[2], _mm512_broadcastd_epi32(_mm_srli_si128(sums, 8))),
                                       _mm512_madd_epi16(mins[3], _mm512_broadcastd_epi32(_mm_srli_si128(sums, 12))));
  return _mm512_add_epi32(m01, m23);
}

// Row r's 4-product sums of two runs (values · 4 broadcast activation bytes by VPDPBUSD; within
// ±4·31·128, so 16 bits) as the 16-bit pair (first run, second run), for one VPDPWSSD against the
// rows' pair of run scales (Q5_K's lanes). The integers are exact, so the lane sums equal those of
// two VPMADDUBSW + VPDPWSSD, with one multiplier-pipe instruction fewer per pair. Measured while Q4_K
// still used this form: kernels_bench gemm_l2/Q4_K/avx512/5, Zen 5, one core, 126-155 -> 160-162 G
// multiply-adds/s, Q5_K unchanged (Q6_K, whose six-bit values already keep the other vector pipes
// busy, went 142-150 -> 135-138: not used). On Zen 4 that Q4_K loop ran at ~83 % of its
// multiply-pipe floor in L1, the bound q4_K_group's order removed (docs/BENCHMARKS.md, 2026-12-07
// 15:22 and 16:54 UTC).
NUCLEUS_VNNI512 inline __m512i run_pair_sums(__m512i first, __m512i second, const int8_t* x_first, const int8_t* x_second) {
  const __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), first, broadcast4(x_first));
  const __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), second, broadcast4(x_second));
  return _mm512_mask_blend_epi16(0xAAAAAAAA, s0, _mm512_slli_epi32(s1, 16));
}

// Q5_K in llama.cpp's AVX2 order (dot_scalar.cpp): per block and lane step k, the 8 runs' scaled
// 4-product sums at positions 4k..4k+3, each pair of runs by run_pair_sums and one VPDPWSSD; lane k's
// float accumulator gets fma(x.d · w.d, lane), the mins one fma(−x.d · w.dmin, msum), and at the end
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) + mins, across registers instead of within one.
template <int N>
NUCLEUS_VNNI512 void q5_K_group(const uint8_t* group, int64_t n_blocks, const BlockQ8_K* const* x, float* out) {
  constexpr PackedQ45KLayout kLayout = packed_q45_k_layout(true);
  const __m512i pair_index = row_byte_pair_index(0);
  __m512 acc[N][8], acc_m[N];
  for (int t = 0; t < N; ++t) {
    for (int k = 0; k < 8; ++k) acc[t][k] = _mm512_setzero_ps();
    acc_m[t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = group + static_cast<size_t>(b) * kLayout.block;
    // Row r's (scale 2c, scale 2c + 1) as a 16-bit pair.
    __m512i scale_pair[4];
    for (int c = 0; c < 4; ++c) {
      const __m512i even = _mm512_shuffle_epi8(
          _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(block + kLayout.scales + 32 * c))), pair_index);
      const __m512i odd = _mm512_shuffle_epi8(
          _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(block + kLayout.scales + 32 * c + 16))), pair_index);
      scale_pair[c] = _mm512_mask_blend_epi16(0xAAAAAAAA, even, odd);
    }
    const __m512 wd = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kLayout.d)));
    __m512 d[N];
    for (int t = 0; t < N; ++t) d[t] = _mm512_mul_ps(_mm512_set1_ps(x[t][b].d), wd);
    for (int k = 0; k < 8; ++k) {
      prefetch_block_slice<kLayout.block>(block + kPrefetchBlocks * kLayout.block, k);
      __m512i lanes[N];
      for (int t = 0; t < N; ++t) lanes[t] = _mm512_setzero_si512();
      const __m512i qh = _mm512_load_si512(block + kLayout.qh + 64 * k);
      __m512i values[8];
      run_values<0>(block, k, qh, &values[0], &values[1]);
      run_values<1>(block, k, qh, &values[2], &values[3]);
      run_values<2>(block, k, qh, &values[4], &values[5]);
      run_values<3>(block, k, qh, &values[6], &values[7]);
      for (int c = 0; c < 4; ++c) {
        for (int t = 0; t < N; ++t) {
          const int8_t* xq = x[t][b].qs + 64 * c + 4 * k;
          lanes[t] = _mm512_dpwssd_epi32(lanes[t], run_pair_sums(values[2 * c], values[2 * c + 1], xq, xq + 32), scale_pair[c]);
        }
      }
      for (int t = 0; t < N; ++t) acc[t][k] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(lanes[t]), acc[t][k]);
    }
    const __m512 wdmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kLayout.dmin)));
    __m512i mins[4];
    for (int i = 0; i < 4; ++i)
      mins[i] = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kLayout.mins + 32 * i)));
    for (int t = 0; t < N; ++t) {
      const __m512 dmin = _mm512_mul_ps(_mm512_set1_ps(-x[t][b].d), wdmin);
      acc_m[t] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(mins_sum(mins, x[t][b].bsums)), acc_m[t]);
    }
  }
  for (int t = 0; t < N; ++t) {
    const __m512 even = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][4]), _mm512_add_ps(acc[t][2], acc[t][6]));
    const __m512 odd = _mm512_add_ps(_mm512_add_ps(acc[t][1], acc[t][5]), _mm512_add_ps(acc[t][3], acc[t][7]));
    _mm512_storeu_ps(out + t * kPackRows, _mm512_add_ps(_mm512_add_ps(even, odd), acc_m[t]));
  }
}

// Runs of a Q4_K block in flight at once: each (run, token) is one chain of 8 dependent VPDPBUSD, so
// fewer tokens need more runs to keep the multiplier busy (and more tokens fewer, to stay in registers).
constexpr int q4_K_runs_in_flight(int n_tokens) { return n_tokens == 1 ? 8 : n_tokens == 2 ? 4 : n_tokens <= 4 ? 2 : 1; }

// Q4_K in dot_scalar.cpp's order for it: per block and row the exact isum = Σ over runs j of
// scale_j · (Σ of the run's 32 products) and msum = Σ min · (sub-block Σx), then acc = fma(x.d · w.d,
// isum, acc), acc_m = fma(−x.d · w.dmin, msum, acc_m), and acc + acc_m at the end. Run j's values are
// nibble j % 2 of the registers of run pair j / 2 (one per lane k, positions 4k..4k+3): VPDPBUSD
// chains all 8 lanes into one sum per row, and one VPMULLD per run and token applies the scale. That
// is 9 multiplier instructions per run and token where llama.cpp's lanes need 12 (as q5_K_group
// still spends for Q5_K).
template <int N>
NUCLEUS_VNNI512 void q4_K_group(const uint8_t* group, int64_t n_blocks, const BlockQ8_K* const* x, float* out) {
  constexpr size_t kBlock = kPackedQ4KBlockBytes;
  constexpr int kRuns = q4_K_runs_in_flight(N);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 acc[N], acc_m[N];
  for (int t = 0; t < N; ++t) acc[t] = _mm512_setzero_ps(), acc_m[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = group + static_cast<size_t>(b) * kBlock;
    __m512i isum[N];
    for (int t = 0; t < N; ++t) isum[t] = _mm512_setzero_si512();
    for (int j0 = 0; j0 < 8; j0 += kRuns) {
      for (int r = 0; r < kRuns; ++r) prefetch_block_slice<kBlock>(block + kPrefetchBlocks * kBlock, j0 + r);
      __m512i run[kRuns][N];
      for (int r = 0; r < kRuns; ++r)
        for (int t = 0; t < N; ++t) run[r][t] = _mm512_setzero_si512();
      for (int k = 0; k < 8; ++k) {
        for (int r = 0; r < kRuns; ++r) {
          const int j = j0 + r;
          const __m512i q = _mm512_load_si512(block + 64 * (4 * k + j / 2));
          const __m512i v = j % 2 == 0 ? _mm512_and_si512(q, low4) : _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
          for (int t = 0; t < N; ++t) run[r][t] = _mm512_dpbusd_epi32(run[r][t], v, broadcast4(x[t][b].qs + 32 * j + 4 * k));
        }
      }
      for (int r = 0; r < kRuns; ++r) {
        const __m512i scale = _mm512_cvtepu8_epi32(
            _mm_load_si128(reinterpret_cast<const __m128i*>(block + kPackedQ4KScalesOffset + 16 * (j0 + r))));
        for (int t = 0; t < N; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(run[r][t], scale));
      }
    }
    const __m512 wd = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kPackedQ4KDOffset)));
    const __m512 wdmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kPackedQ4KDminOffset)));
    __m512i mins[4];
    for (int i = 0; i < 4; ++i)
      mins[i] = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kPackedQ4KMinsOffset + 32 * i)));
    for (int t = 0; t < N; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(x[t][b].d), wd), _mm512_cvtepi32_ps(isum[t]), acc[t]);
      const __m512 dmin = _mm512_mul_ps(_mm512_set1_ps(-x[t][b].d), wdmin);
      acc_m[t] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(mins_sum(mins, x[t][b].bsums)), acc_m[t]);
    }
  }
  for (int t = 0; t < N; ++t) _mm512_storeu_ps(out + t * kPackRows, _mm512_add_ps(acc[t], acc_m[t]));
}

template <bool kQ5, int N>
NUCLEUS_VNNI512 void group_pass(const uint8_t* group, int64_t n_blocks, const BlockQ8_K* const* x, float* out) {
  if constexpr (kQ5) q5_K_group<N>(group, n_blocks, x, out);
  else q4_K_group<N>(group, n_blocks, x, out);
}

// Up to 8 tokens per pass over the group, as many passes as needed.
template <bool kQ5>
NUCLEUS_VNNI512 void q45_K_groups(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out) {
  const uint8_t* group = w.group(g);
  while (n_tokens > 0) {
    switch (n_tokens) {
      case 1: group_pass<kQ5, 1>(group, w.n_blocks, x, out); return;
      case 2: group_pass<kQ5, 2>(group, w.n_blocks, x, out); return;
      case 3: group_pass<kQ5, 3>(group, w.n_blocks, x, out); return;
      case 4: group_pass<kQ5, 4>(group, w.n_blocks, x, out); return;
      case 5: group_pass<kQ5, 5>(group, w.n_blocks, x, out); return;
      case 6: group_pass<kQ5, 6>(group, w.n_blocks, x, out); return;
      case 7: group_pass<kQ5, 7>(group, w.n_blocks, x, out); return;
      default: group_pass<kQ5, 8>(group, w.n_blocks, x, out); break;
    }
    x += 8, out += 8 * kPackRows, n_tokens -= 8;
  }
}

}  // namespace

NUCLEUS_VNNI512 void packed_q4_K_avx512(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out) {
  q45_K_groups<false>(w, g, x, n_tokens, out);
}

NUCLEUS_VNNI512 void packed_q5_K_avx512(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out) {
  q45_K_groups<true>(w, g, x, n_tokens, out);
}

}  // namespace nucleus
