// Dot products between one stored weight row and one activation row, per weight type.
// Each instruction set provides a full table; the scalar table is the reference every SIMD
// table is tested against. A row's reduction order depends only on the table and n, never
// on how many rows or tokens a matmul processes, which is what makes batching invariant.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/kquant_tile.h"
#include "kernels/packed_dot.h"
#include "kernels/packed_f16.h"
#include "kernels/packed_kquant.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_activations.h"
#include "kernels/quantize_k.h"
#include "kernels/tile_bf16.h"
#include "kernels/tile_f16.h"

namespace nucleus {

enum class Isa { Scalar, Avx2, Avx512 };
const char* isa_name(Isa isa);

struct DotKernels {
  Isa isa;
  // w[n] · x[n], f32 accumulation.
  float (*dot_f32)(const float* w, const float* x, int64_t n);
  float (*dot_f16_f32)(const uint16_t* w, const float* x, int64_t n);
  float (*dot_bf16_f32)(const uint16_t* w, const float* x, int64_t n);
  // Integer formats: the activation row is pre-quantized to Q8_0 blocks; n_blocks of 32. The float
  // steps follow a fixed order shared with the packed kernels (see kernels/packed_dot.h).
  float (*dot_q8_0_q8_0)(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n_blocks);
  float (*dot_q4_0_q8_0)(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n_blocks);
  // K-quants against Q8_K activations; n_blocks of 256.
  float (*dot_q4_K_q8_K)(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks);
  float (*dot_q5_K_q8_K)(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n_blocks);
  float (*dot_q6_K_q8_K)(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n_blocks);

  // Several tokens at once (prefill, batched decode, speculative verification): out[j] =
  // dot(w, x[j]) for j < n_tokens (1 ≤ n_tokens ≤ kDotTokens), bit-identical to n_tokens single
  // calls — each piece of the weight row is converted once and serves every token.
  // nullptr where a table has none; matmul then makes the single calls.
  void (*dotn_f16_f32)(const uint16_t* w, const float* const* x, int n_tokens, int64_t n, float* out) = nullptr;
  void (*dotn_q4_K_q8_K)(const BlockQ4_K* w, const BlockQ8_K* const* x, int n_tokens, int64_t n_blocks, float* out) = nullptr;
  void (*dotn_q6_K_q8_K)(const BlockQ6_K* w, const BlockQ8_K* const* x, int n_tokens, int64_t n_blocks, float* out) = nullptr;
  // Row groups of packed Q4_0 / Q8_0 weights (kernels/packed_rows.h) against up to kPackTokens
  // tokens, bit-identical to dot_q4_0_q8_0 / dot_q8_0_q8_0 on the unpacked rows.
  PackedGroupKernel packed_q4_0 = nullptr;
  PackedGroupKernel packed_q8_0 = nullptr;
  // Row groups of packed Q4_K / Q5_K / Q6_K weights (kernels/packed_kquant.h), bit-identical to
  // dot_q*_K_q8_K; only where a table has them are such matrices packed at load (nullptr: they
  // stay row-major).
  PackedKQuantKernel packed_q4_K = nullptr;
  PackedKQuantKernel packed_q5_K = nullptr;
  PackedKQuantKernel packed_q6_K = nullptr;
  // Several F16 rows × several tokens per call (kernels/tile_f16.h), bit-identical to dot_f16_f32;
  // nullptr where a table has none (matmul then uses dotn_f16_f32 row by row).
  F16TileKernel tile_f16_f32 = nullptr;
  // Groups of packed F16 rows (kernels/packed_f16.h): the same tile on a forward stream; only where
  // a table has it are F16 matrices packed at load.
  PackedF16Kernel packed_f16 = nullptr;
  // Two K-quant rows × up to four tokens per call (kernels/kquant_tile.h), bit-identical to
  // dot_q*_K_q8_K; nullptr where a table has none (matmul then uses the dotn/dot kernels).
  KQuantTileKernels tile_q4_K = {}, tile_q5_K = {}, tile_q6_K = {};
  // BF16 weights where the CPU has AVX512_BF16 (kernels/tile_bf16.h): activations rounded to BF16
  // by round_to_bf16 and every token count through these tiles, as llama.cpp does; nullptr
  // elsewhere (matmul then uses dot_bf16_f32 on f32 activations).
  BF16TileKernel tile_bf16 = nullptr;
  PackedBF16Kernel packed_bf16 = nullptr;  // the BF16 tile on packed groups (kernels/packed_f16.h), with tile_bf16
  RoundToBF16 round_to_bf16 = round_to_bf16_scalar;
  // Activation rows for the integer kernels (kernels/quantize_activations.h): the same bytes on
  // every table, faster where the ISA has a version.
  QuantizeQ8_0Row quantize_q8_0 = quantize_q8_0_row_scalar;
  QuantizeQ8_KRow quantize_q8_K = quantize_activations_q8_K;
};
constexpr int kDotTokens = 8;  // tokens per multi-token dot call at most

const DotKernels& scalar_dot_kernels();
const DotKernels& avx2_dot_kernels();    // requires AVX2 + FMA + F16C
const DotKernels& avx512_dot_kernels();  // requires AVX-512 F/VL/BW/VNNI as well
bool cpu_supports(Isa isa);

// The best table for this CPU, unless NUCLEUS_ISA=scalar|avx2|avx512 forces one (an
// unsupported or unknown value is an Error).
const DotKernels& select_dot_kernels();
const DotKernels& dot_kernels_for(Isa isa);  // throws Error if the CPU lacks it

}  // namespace nucleus
