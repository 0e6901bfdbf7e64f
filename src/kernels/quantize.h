// Conversions between f32 rows and the stored weight types (reference, scalar).
// These follow ggml's reference quantizers bit for bit, so `nucleus quantize` writes the
// same bytes llama.cpp does.
#pragma once
#include <cstdint>

#include "io/ggml_type.h"
#include "kernels/quant_blocks.h"

namespace nucleus {

// x[n] → blocks; n is a multiple of 32. Reference quantizers for weights (ggml's *_ref).
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);

// Activations for integer dot products: like quantize_row_q8_0 but with scale 127/amax and
// round-half-to-even, which is what llama.cpp's SIMD quantizer computes at run time (so our
// logits track its reference outputs as closely as possible).
void quantize_activations_q8_0(const float* x, BlockQ8_0* y, int64_t n);

// Any supported type → f32. `src` points at the row's first byte; n elements.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
// f32 → any supported type (the row's bytes at dst); n elements.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace nucleus
