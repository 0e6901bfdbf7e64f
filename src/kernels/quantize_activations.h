// Activation rows quantized for the integer kernels, per ISA table (DotKernels::quantize_q8_0 /
// quantize_q8_K). Every version writes the same bytes as the scalar reference
// (quantize_activations_q8_0, quantize_activations_q8_K): a matmul's activations are part of its
// result, so the tables' bit-identity would not survive a different rounding here.
#pragma once
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace nucleus {

// x[k] → k / 32 Q8_0 blocks plus what the packed kernels (kernels/packed_dot.h) read per block:
// scale[b] = the block's d as f32, sum[b] = Σ of its 32 quants, chunk_bias[8b + c] = −128 · Σ of quants
// 4c..4c+3.
using QuantizeQ8_0Row = void (*)(const float* x, int64_t k, BlockQ8_0* blocks, float* scale, int32_t* sum,
                                 int32_t* chunk_bias);
// x[k] → k / 256 Q8_K blocks.
using QuantizeQ8_KRow = void (*)(const float* x, BlockQ8_K* y, int64_t k);

void quantize_q8_0_row_scalar(const float* x, int64_t k, BlockQ8_0* blocks, float* scale, int32_t* sum,
                              int32_t* chunk_bias);
void quantize_q8_0_row_avx512(const float* x, int64_t k, BlockQ8_0* blocks, float* scale, int32_t* sum,
                              int32_t* chunk_bias);
void quantize_q8_K_row_avx512(const float* x, BlockQ8_K* y, int64_t k);

}  // namespace nucleus
