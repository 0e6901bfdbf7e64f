// AVX512_BF16 tiles (see kernels/tile_bf16.h): VDPBF16PS does one 32-column step of 16 lanes per
// instruction, twice the multiply-adds of an f32 FMA, with no conversion of the weights. Compiled
// with a target attribute; the table hands it out only where cpu_has_avx512_bf16().
#include <cpuid.h>
#include <immintrin.h>

#include "kernels/dispatch_tokens.h"
#include "kernels/dot.h"
#include "kernels/horizontal_sum_x86.h"
#include "kernels/tile_rows.h"
#include "kernels/tile_bf16.h"
#include "kernels/packed_f16.h"

#define NUCLEUS_AVX512_BF16 __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512bf16")))

namespace nucleus {

bool cpu_has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // CPUID leaf 7, subleaf 1: EAX bit 5
  return __builtin_cpu_supports("avx512f") && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
}

namespace {

NUCLEUS_AVX512_BF16 inline __m512 dot_step(__m512 acc, __m512i w, __m512i x) {
  return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)x);
}

// Where row r's columns i .. i+31 of a tile sit (i a multiple of 32), and what to prefetch meanwhile
// (as in tile_f16_avx512.cpp). Row-major rows (kernels/tile_rows.h: a partial tile repeats its last
// row), prefetching the next tile's rows at the same column.
template <int R>
struct RowMajorTile {
  TileRows<R> rows;
  const uint16_t* at(int r, int64_t i) const { return rows.w[r] + i; }
  template <int N>
  NUCLEUS_AVX512_BF16 void prefetch(int64_t i) const {
    for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(rows.ahead[r] + i), _MM_HINT_T0);
  }
};

// A packed group of kPackedHalfRows rows (kernels/packed_f16.h): chunk i / 32 holds the 32 columns of
// all 4 rows, 256 bytes, one forward stream; from two tokens its four lines 4 KB further on are
// prefetched (one token reads too fast for it, as measured for F16), into L2 as F16's (on Zen 4 BF16
// streams at the same speed with T0 or T1).
struct PackedBF16Tile {
  const uint16_t* group;
  const uint16_t* at(int r, int64_t i) const { return group + kPackedHalfRows * i + kPackedBF16Chunk * r; }
  template <int N>
  NUCLEUS_AVX512_BF16 void prefetch(int64_t i) const {
    if constexpr (N > 1)
      for (int line = 0; line < 4; ++line)
        _mm_prefetch(reinterpret_cast<const char*>(at(0, i) + 2048 + 32 * line), _MM_HINT_T1);
  }
};

// R rows × N tokens; columns past the last multiple of 32 (row-major only: a packed matrix has none)
// load as zeros.
template <int R, int N, class Tile>
NUCLEUS_AVX512_BF16 void tile(const Tile& w, int n_rows, const uint16_t* const* x, int64_t n, float* out) {
  __m512 acc[R][N];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j) acc[r][j] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    w.template prefetch<N>(i);
    __m512i wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_si512(w.at(r, i));
    for (int j = 0; j < N; ++j) {
      __m512i xv = _mm512_loadu_si512(x[j] + i);
      __asm__("" : "+v"(xv));  // one load per token, not one folded into each of the R products
      for (int r = 0; r < R; ++r) acc[r][j] = dot_step(acc[r][j], wv[r], xv);
    }
  }
  if (i < n) {  // the last partial step: columns past n load as zeros
    const __mmask32 valid = static_cast<__mmask32>((uint64_t{1} << (n - i)) - 1);
    __m512i wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_epi16(valid, w.at(r, i));
    for (int j = 0; j < N; ++j) {
      const __m512i xv = _mm512_maskz_loadu_epi16(valid, x[j] + i);
      for (int r = 0; r < R; ++r) acc[r][j] = dot_step(acc[r][j], wv[r], xv);
    }
  }
  for (int r = 0; r < n_rows && r < R; ++r)
    for (int j = 0; j < N; ++j) out[r * kDotTokens + j] = horizontal_sum_halves(acc[r][j]);
}

template <int N>
NUCLEUS_AVX512_BF16 void tile_tokens(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                                     const uint16_t* const* x, int64_t n, float* out) {
  constexpr int R = bf16_tile_rows(N);
  tile<R, N>(RowMajorTile<R>{TileRows<R>(w, n_rows, ahead)}, n_rows, x, n, out);
}

template <int N>
NUCLEUS_AVX512_BF16 void packed_tokens(const uint16_t* group, const uint16_t* const* x, int64_t n, float* out) {
  static_assert(bf16_tile_rows(N) == kPackedHalfRows);
  tile<kPackedHalfRows, N>(PackedBF16Tile{group}, kPackedHalfRows, x, n, out);
}

}  // namespace

NUCLEUS_AVX512_BF16 void tile_bf16_avx512(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                                          const uint16_t* const* x, int n_tokens, int64_t n, float* out) {
  static_assert(kDotTokens == 8);
  NUCLEUS_DISPATCH_TOKENS(tile_tokens, w, n_rows, ahead, x, n, out)
}

NUCLEUS_AVX512_BF16 void packed_bf16_avx512(const uint16_t* group, const uint16_t* const* x, int n_tokens, int64_t n,
                                            float* out) {
  NUCLEUS_DISPATCH_TOKENS_6(packed_tokens, group, x, n, out)
}

// f32_to_bf16 on 16 values at once: NaN → its high half with the quiet bit; otherwise
// (bits + 0x7fff + bit 16) >> 16, which rounds to nearest even (and overflows to infinity).
NUCLEUS_AVX512_BF16 void round_to_bf16_avx512(const float* x, uint16_t* out, int64_t n) {
  int64_t i = 0;
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(64);
  for (; i < n; i += 16) {
    const __mmask16 valid = n - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i bits = _mm512_maskz_loadu_epi32(valid, x + i);
    const __m512i high = _mm512_srli_epi32(bits, 16);
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(bits, _mm512_add_epi32(bias, _mm512_and_si512(high, one))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, abs_mask), inf);
    const __m512i result = _mm512_mask_or_epi32(rounded, nan, high, quiet);
    _mm512_mask_cvtepi32_storeu_epi16(out + i, valid, result);
  }
}

}  // namespace nucleus
