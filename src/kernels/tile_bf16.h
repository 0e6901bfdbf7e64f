// BF16 weights against BF16-rounded activations with the VDPBF16PS dot product (AVX512_BF16), as
// llama.cpp multiplies BF16 weights: each activation is rounded to BF16 first (round_to_bf16), and
// the products of two BF16 values are summed in f32.
//
// The order every path follows (scalar reference, SIMD tiles, 1 token or 8), per output:
//   16 f32 lanes, zero; for each 32-column step s (columns past n count as zeros),
//     lane l += w[32s + 2l + 1] · x[32s + 2l + 1], then += w[32s + 2l] · x[32s + 2l]
//   — each add rounded to nearest even, BF16 inputs and the lane's value treated as zero when
//   subnormal, a subnormal result flushed to zero (VDPBF16PS's definition; measured identical on
//   Zen 5 over 32 M random lane steps) —
//   then a[i] = lane[i] + lane[i + 8] and ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
// Nothing in it depends on how many rows or tokens share a call, so results are batch-invariant.
//
//   out[r · kDotTokens + j] = dot(w[r], x[j])  for r < n_rows ≤ bf16_tile_rows(n_tokens), j < n_tokens ≤ 8.
#pragma once
#include <cstdint>

namespace nucleus {

// Rows per tile: R·N accumulators + R weight vectors + 1 activation vector within 32 registers.
constexpr int bf16_tile_rows(int n_tokens) { return n_tokens <= 6 ? 4 : 3; }
constexpr int kMaxBF16TileRows = 4;

// ahead[0, n_rows): rows to prefetch while this tile runs (the next tile's), never read.
using BF16TileKernel = void (*)(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead,
                                const uint16_t* const* x, int n_tokens, int64_t n, float* out);
// x[0, n) → BF16, round to nearest even, NaN kept quiet (core/fp16.h's f32_to_bf16 for each value).
using RoundToBF16 = void (*)(const float* x, uint16_t* out, int64_t n);

// The scalar reference for both.
float dot_bf16_pairs_reference(const uint16_t* w, const uint16_t* x, int64_t n);
void round_to_bf16_scalar(const float* x, uint16_t* out, int64_t n);

// The AVX512_BF16 versions (tile_bf16_avx512.cpp), for CPUs with that extension only.
bool cpu_has_avx512_bf16();
void tile_bf16_avx512(const uint16_t* const* w, int n_rows, const uint16_t* const* ahead, const uint16_t* const* x,
                      int n_tokens, int64_t n, float* out);
void round_to_bf16_avx512(const float* x, uint16_t* out, int64_t n);

}  // namespace nucleus
