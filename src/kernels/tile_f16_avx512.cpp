// AVX-512 F16 tiles (see kernels/tile_f16.h). Compiled with a target attribute, so the binary
// still runs on CPUs without AVX-512; select_dot_kernels() only hands this out where it runs.
#include <immintrin.h>

#include "kernels/dispatch_tokens.h"
#include "kernels/dot.h"
#include "kernels/horizontal_sum_x86.h"
#include "kernels/tile_rows.h"
#include "kernels/tile_f16.h"
#include "kernels/packed_f16.h"

#define NUCLEUS_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))

namespace nucleus {

namespace {

// Where row r's columns i .. i+15 of a tile sit (i a multiple of 16), and what to prefetch meanwhile.
// Row-major rows (kernels/tile_rows.h: a partial tile repeats its last row); the next tile's rows at
// the same column are prefetched.
template <int R>
struct RowMajorTile {
  static constexpr bool kRowMajor = true;
  TileRows<R> rows;
  const uint16_t* at(int r, int64_t i) const { return rows.w[r] + i; }
  template <int N>
  NUCLEUS_AVX512 void prefetch(int64_t i) const {
    for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(rows.ahead[r] + i), _MM_HINT_T0);
  }
  // Columns past the last multiple of 16 (the packed layout has none).
  NUCLEUS_AVX512 float element(int r, int64_t t) const { return _cvtsh_ss(rows.w[r][t]); }
};

// A packed group of kPackedHalfRows rows (kernels/packed_f16.h): chunk i / 16 holds the 16 columns
// of all 4 rows, 128 bytes, one forward stream.
struct PackedF16Tile {
  static constexpr bool kRowMajor = false;
  const uint16_t* group;
  const uint16_t* at(int r, int64_t i) const { return group + kPackedHalfRows * i + kPackedF16Chunk * r; }
  // The two lines of the chunk 4 KB further on: many tokens per chunk leave the stream time to
  // fall behind (kernels_bench gemm/F16/avx512/16 and /128, one thread, Zen 5: 76-84 and 84-87 G
  // multiply-adds/s, none 49-53 and 80-83, the next group's chunk 61-77 and 79-83, 2 KB ahead 77-78
  // and 88, 8 KB 64-78 and 68-85). One token reads too fast for it: TinyLlama F16 decode, one
  // thread, 10.5-11.5 tok/s with it, 11.1-12.6 without. So only from two tokens. Into L2 (T1): on
  // Zen 4, T0 left `stream/F16/avx512/1/5` at 142 ms (no prefetch: 165), T1 76-95 ms.
  template <int N>
  NUCLEUS_AVX512 void prefetch(int64_t i) const {
    if constexpr (N > 1) {
      const uint16_t* p = at(0, i) + 2048;
      _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(p + 32), _MM_HINT_T1);
    }
  }
  float element(int, int64_t) const { return 0.0f; }
};

// Where R·N accumulators, the N tokens' activation vectors and one weight vector fit the 32
// registers, a step loads the activations once and converts the weight rows one at a time (the
// same multiply-adds into each accumulator in the same order, so the same bits). Against holding
// the R weight vectors and loading each token's activations in turn, one thread, Zen 5:
// kernels_bench gemm_l2/F16/avx512/128 89.7 against 87.9 G multiply-adds/s (medians of 10
// alternations, better in 7), /5 better in 8 of 10; a one-core harness of that shape switching
// between the two every ~0.1 s, 1.02x in the median of 18 rounds (better in 15).
template <int R, int N>
constexpr bool kActivationsHeld = R * N + N + 1 <= 32;

// R rows × N tokens.
template <int R, int N, class Tile>
NUCLEUS_AVX512 void tile(const Tile& w, int n_rows, const float* const* x, int64_t n, float* out) {
  __m512 acc[R][N];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j) acc[r][j] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // The weights stream from memory while the FMAs run. Row-major: ask for the next tile's at
    // the same column, one tile (R rows) ahead. A 5-token pass over TinyLlama-shape F16 ran 7-14%
    // faster in six of six interleaved runs than asking 1 KB ahead within the row, whose
    // requests fall into the rows this tile already reads.
    w.template prefetch<N>(i);
    if constexpr (kActivationsHeld<R, N>) {
      __m512 xv[N];
      for (int j = 0; j < N; ++j) {
        xv[j] = _mm512_loadu_ps(x[j] + i);
        __asm__("" : "+v"(xv[j]));  // one load each (see below)
      }
      for (int r = 0; r < R; ++r) {
        const __m512 wv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.at(r, i))));
        for (int j = 0; j < N; ++j) acc[r][j] = _mm512_fmadd_ps(wv, xv[j], acc[r][j]);
      }
    } else {
      __m512 wv[R];
      for (int r = 0; r < R; ++r) {
        wv[r] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.at(r, i))));
      }
      for (int j = 0; j < N; ++j) {
        __m512 xv = _mm512_loadu_ps(x[j] + i);
        // Keep xv in a register: with -march=native GCC 12 tunes for znver3 and folds the load into
        // each of the R FMAs, R times the loads; on this Zen 5 that made the tile ~1.5x slower.
        __asm__("" : "+v"(xv));
        for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(wv[r], xv, acc[r][j]);
      }
    }
  }
  if constexpr (Tile::kRowMajor) {
    if (i + 8 <= n) {  // the single-token kernel's 8-wide step: low half (acc0) only
      const __mmask16 low = 0x00ff;
      __m512 wv[R];
      for (int r = 0; r < R; ++r) wv[r] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(low, w.at(r, i)));
      for (int j = 0; j < N; ++j) {
        const __m512 xv = _mm512_maskz_loadu_ps(low, x[j] + i);
        for (int r = 0; r < R; ++r) acc[r][j] = _mm512_mask3_fmadd_ps(wv[r], xv, acc[r][j], low);
      }
      i += 8;
    }
  }
  for (int r = 0; r < n_rows && r < R; ++r) {
    for (int j = 0; j < N; ++j) {
      float sum = horizontal_sum_halves(acc[r][j]);
      if constexpr (Tile::kRowMajor)
        for (int64_t t = i; t < n; ++t) sum += w.element(r, t) * x[j][t];
      out[r * kDotTokens + j] = sum;
    }
  }
}

template <int N>
NUCLEUS_AVX512 void tile_tokens(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                                const float* const* x, int64_t n, float* out) {
  constexpr int R = f16_tile_rows(N);
  tile<R, N>(RowMajorTile<R>{TileRows<R>(w, n_rows, ahead)}, n_rows, x, n, out);
}

template <int N>
NUCLEUS_AVX512 void packed_tokens(const uint16_t* group, const float* const* x, int64_t n, float* out) {
  static_assert(f16_tile_rows(N) == kPackedHalfRows);
  tile<kPackedHalfRows, N>(PackedF16Tile{group}, kPackedHalfRows, x, n, out);
}

}  // namespace

NUCLEUS_AVX512 void tile_f16_f32_avx512(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                                        const float* const* x, int n_tokens, int64_t n, float* out) {
  static_assert(kDotTokens == 8);
  NUCLEUS_DISPATCH_TOKENS(tile_tokens, w, n_rows, ahead, x, n, out)
}

NUCLEUS_AVX512 void packed_f16_f32_avx512(const uint16_t* group, const float* const* x, int n_tokens, int64_t n,
                                          float* out) {
  NUCLEUS_DISPATCH_TOKENS_6(packed_tokens, group, x, n, out)
}

}  // namespace nucleus
