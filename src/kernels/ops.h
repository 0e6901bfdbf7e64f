// Elementwise, normalization and attention operators of the transformer block (f32; attention
// also reads an f16 KV cache).
//
// Each instruction set provides a full OpsKernels table; the scalar table is the reference every
// SIMD table is tested against (tests/ops_test.cpp). Every op works on one token's row and reduces
// in an order that depends only on the table and the row length, never on how many tokens share a
// step or which thread runs it — which is what keeps batching invariant.
#pragma once
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/dot.h"

namespace nucleus {

struct OpsKernels {
  Isa isa;
  // out[n] = x[n] / sqrt(mean(x²) + eps) * weight[n]   (out may alias x; mean of squares in f64)
  void (*rms_norm)(const float* x, const float* weight, float* out, int64_t n, float eps);
  // Rotates the first n_rot dimensions of each of n_heads head vectors x[n_heads, head_dim] in place
  // with one position's row of a RopeTable (rope_table.h): cos_sin[2, n_rot].
  void (*rope)(float* x, int64_t n_heads, int64_t head_dim, const float* cos_sin, int64_t n_rot, bool neox);
  // In place: x = softmax(x) over n.
  void (*softmax)(float* x, int64_t n);
  // out[n] = silu(gate[n]) * up[n]   (out may alias gate)
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
  // y[n] += x[n]   (the residual add; bit-identical in every table)
  void (*add)(float* y, const float* x, int64_t n);
  // Causal attention of one token for the query heads that share one KV head (attention.h).
  void (*attention)(const AttentionArgs& args);
  // The same over an f16 cache (args.keys_f16 / values_f16): elements widened to f32 as loaded,
  // then exactly the arithmetic of `attention` (bit-identical to it on the widened rows).
  void (*attention_f16)(const AttentionArgs& args);
  // out[n] = exp(x[n]): the exponential softmax, swiglu and attention use (std::exp in the scalar
  // table; within about 1 ulp of it in the SIMD ones).
  void (*exp)(const float* x, float* out, int64_t n);
};

const OpsKernels& scalar_ops_kernels();
const OpsKernels& avx2_ops_kernels();    // requires AVX2 + FMA
// The same operators and the same bits, with the weighted value sums of attention in 512-bit
// registers (attention_values_avx512.h); requires AVX-512.
const OpsKernels& avx512_ops_kernels();
// The table for an instruction set (Avx512 gets the AVX2 operators, with the value sums of attention
// in wider registers: one summation order on every x86 machine, so AVX2 and AVX-512 give the same logits); the model uses the one matching its dot-product table, so
// NUCLEUS_ISA (select_dot_kernels) and Model::set_kernels choose both. Throws Error if the CPU lacks it.
const OpsKernels& ops_kernels_for(Isa isa);

// Scalar reference forms, one row at a time (the scalar table is built from these).
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);
// Rotary position embedding applied in place to one head vector x[head_dim]; only the first
// n_rot dimensions rotate. Pair i uses angle pos · base^(−2i/n_rot) (rope_angle in rope_table.h).
//   normal (llama): pairs (2i, 2i+1)
//   neox (qwen2):   pairs (i, i + n_rot/2)
void rope(float* x, int64_t n_rot, int64_t position, float freq_base, bool neox);
void softmax(float* x, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);

}  // namespace nucleus
