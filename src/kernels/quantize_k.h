// K-quant conversions (Q4_K, Q5_K, Q6_K weights; Q8_K activations), reference scalar code.
//
// Dequantization follows the GGUF definitions exactly. Our weight quantizers are a plain
// min/max fit per sub-block with 6-/8-bit scales (not llama.cpp's iterative search), so files we
// write load anywhere but are not byte-identical to llama-quantize's K-quant output.
#pragma once
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace nucleus {

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n);

void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n);
void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n);
void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n);

// Activations for K-quant dot products (ggml's Q8_K: scale −127/max, round half to even).
void quantize_activations_q8_K(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace nucleus
