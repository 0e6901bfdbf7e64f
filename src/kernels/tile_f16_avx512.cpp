// AVX-512 F16 tiles (see kernels/tile_f16.h). Compiled with a target attribute, so the binary
// still runs on CPUs without AVX-512; select_dot_kernels() only hands this out where it runs.
#include <immintrin.h>

// GCC 12's _mm512_cvtph_ps leaves an intrinsic-internal value "maybe uninitialized" (a false
// positive in its own header), once per template instance.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/dispatch_tokens.h"
#include "kernels/dot.h"
#include "kernels/horizontal_sum_x86.h"
#include "kernels/tile_rows.h"
#include "kernels/tile_f16.h"

#define NUCLEUS_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))

namespace nucleus {

namespace {

// R rows × N tokens (kernels/tile_rows.h: a partial tile repeats its last row).
template <int R, int N>
NUCLEUS_AVX512 void tile(const uint16_t* const* rows, int n_rows, const uint16_t* const* ahead_rows,
                         const float* const* x, int64_t n, float* out) {
  const TileRows<R> tile_rows(rows, n_rows, ahead_rows);
  const uint16_t* const* w = tile_rows.w;
  const uint16_t* const* ahead = tile_rows.ahead;
  __m512 acc[R][N];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j) acc[r][j] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 wv[R];
    for (int r = 0; r < R; ++r) {
      // The weights stream from memory while the FMAs run: ask for the next tile's at the same
      // column, one tile (R rows) ahead. A 5-token pass over TinyLlama-shape F16 ran 7-14%
      // faster in six of six interleaved runs than asking 1 KB ahead within the row, whose
      // requests fall into the rows this tile already reads.
      _mm_prefetch(reinterpret_cast<const char*>(ahead[r] + i), _MM_HINT_T0);
      wv[r] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r] + i)));
    }
    for (int j = 0; j < N; ++j) {
      __m512 xv = _mm512_loadu_ps(x[j] + i);
      // Keep xv in a register: with -march=native GCC 12 tunes for znver3 and folds the load into
      // each of the R FMAs, R times the loads; on this Zen 5 that made the tile ~1.5x slower.
      __asm__("" : "+v"(xv));
      for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(wv[r], xv, acc[r][j]);
    }
  }
  if (i + 8 <= n) {  // the single-token kernel's 8-wide step: low half (acc0) only
    const __mmask16 low = 0x00ff;
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(low, w[r] + i));
    for (int j = 0; j < N; ++j) {
      const __m512 xv = _mm512_maskz_loadu_ps(low, x[j] + i);
      for (int r = 0; r < R; ++r) acc[r][j] = _mm512_mask3_fmadd_ps(wv[r], xv, acc[r][j], low);
    }
    i += 8;
  }
  for (int r = 0; r < n_rows && r < R; ++r) {
    for (int j = 0; j < N; ++j) {
      float sum = horizontal_sum_halves(acc[r][j]);
      for (int64_t t = i; t < n; ++t) sum += _cvtsh_ss(w[r][t]) * x[j][t];
      out[r * kDotTokens + j] = sum;
    }
  }
}

template <int N>
NUCLEUS_AVX512 void tile_tokens(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                                const float* const* x, int64_t n, float* out) {
  tile<f16_tile_rows(N), N>(w, n_rows, ahead, x, n, out);
}

}  // namespace

NUCLEUS_AVX512 void tile_f16_f32_avx512(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                                        const float* const* x, int n_tokens, int64_t n, float* out) {
  static_assert(kDotTokens == 8);
  NUCLEUS_DISPATCH_TOKENS(tile_tokens, w, n_rows, ahead, x, n, out)
}

}  // namespace nucleus
