// Dot products of packed row groups (kernels/packed_rows.h) against Q8_0 activation rows.
//
// Every (row, token) result follows the reduction order of the row-major dot products in
// dot_scalar.cpp (the integer sums are exact, so only the float steps matter):
//   Q4_0: acc = 0; per block b: acc = fma(float(Σ_j q_w[j]·q_x[j]), d_w[b]·d_x[b], acc)
//   Q8_0: 8 lanes, lane l over columns 4l..4l+3: lane_l = fma(float(Σ_l q_w·q_x), d_w[b]·d_x[b], lane_l),
//         then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
// so a row gives bit-identical results alone, packed, among 16 rows or for 8 tokens at once.
#pragma once
#include <cstdint>

#include "kernels/packed_rows.h"
#include "kernels/quant_blocks.h"

namespace nucleus {

// Activation rows quantized to Q8_0, with what packed kernels need per block precomputed.
struct PackedActivations {
  const BlockQ8_0* blocks = nullptr;  // [n_tokens, n_blocks]
  const float* scale = nullptr;       // [n_tokens, n_blocks] each block's d as f32
  const int32_t* sum = nullptr;       // [n_tokens, n_blocks] Σ of the block's 32 quants
  const int32_t* chunk_bias = nullptr; // [n_tokens, n_blocks, 8] −128 · Σ of each 4 consecutive quants: the
                                      // start of an unsigned (q + 128) Q8_0 weight chunk's integer dot
  int64_t n_blocks = 0;
};

// out[t · kPackRows + i] = dot(row 16·g + i, activation row t0 + t) for t < n_tokens ≤ kPackTokens.
using PackedGroupKernel = void (*)(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n_tokens,
                                   float* out);

void packed_q4_0_scalar(const PackedRows&, int64_t, const PackedActivations&, int64_t, int, float*);
void packed_q8_0_scalar(const PackedRows&, int64_t, const PackedActivations&, int64_t, int, float*);
void packed_q4_0_avx2(const PackedRows&, int64_t, const PackedActivations&, int64_t, int, float*);
void packed_q8_0_avx2(const PackedRows&, int64_t, const PackedActivations&, int64_t, int, float*);
void packed_q4_0_avx512(const PackedRows&, int64_t, const PackedActivations&, int64_t, int, float*);
void packed_q8_0_avx512(const PackedRows&, int64_t, const PackedActivations&, int64_t, int, float*);
// The same bits, for CPUs that run 512-bit operations as two 256-bit halves (Zen 4: the table picks
// it where cpu_splits_512bit_ops()): activations as broadcast loads instead of shuffles.
void packed_q8_0_avx512_split(const PackedRows&, int64_t, const PackedActivations&, int64_t, int, float*);
bool cpu_splits_512bit_ops();

}  // namespace nucleus
