// Register-blocked F16 × F32 tiles: several weight rows against several activation rows in one
// micro-kernel, so each loaded weight vector serves every token and each loaded activation vector
// serves every row (loads per multiply-add fall from ~1 to (R + N) / (R·N)).
//
//   out[r · kDotTokens + j] = dot(w[r], x[j])  for r < n_rows ≤ f16_tile_rows(n_tokens), j < n_tokens,
// each bit-identical to the table's dot_f16_f32(w[r], x[j], n): a 512-bit accumulator's low half
// is that kernel's acc0 and its high half its acc1, with the same per-lane order, the same 8-wide
// tail and the same final reduction.
//
// (Splitting the columns into chunks so the activations stay in L1 across row groups was tried:
// on TinyLlama shapes it measured no faster, so the kernel runs whole rows.) The same tile also
// runs on packed row groups (kernels/packed_f16.h), where the weights are one forward stream.
#pragma once
#include <cstdint>

namespace nucleus {

// Rows per tile for a given token count: R·N accumulators + R weight vectors + 1 activation
// vector fit the 32 vector registers of AVX-512.
constexpr int f16_tile_rows(int n_tokens) { return n_tokens <= 6 ? 4 : 3; }
constexpr int kMaxF16TileRows = 4;
// Tokens per tile in matmul's many-token path: 4 rows × 6 tokens ran 10% faster than 3 × 8 and 5 × 4
// (kernels_bench gemm/F16/avx512/128, one thread, Zen 5, five alternating rounds: 47.5-49.0 vs
// 42.3-45.0 and 42.6-44.2 G multiply-adds/s); six tokens' activation rows are 48 KB at 2048 columns.
constexpr int kF16TileTokens = 6;

// ahead[0, n_rows): rows to prefetch while this tile runs (the next tile's; the tile's own when
// there is none). They are only prefetched, never read, so they do not change `out`.
using F16TileKernel = void (*)(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                               const float* const* x, int n_tokens, int64_t n, float* out);

void tile_f16_f32_avx512(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead, const float* const* x,
                         int n_tokens, int64_t n, float* out);

}  // namespace nucleus
