// The weighted sum of value rows in llama.cpp's order (ops_x86.inc's weighted_values) with 512-bit
// registers: 16 dimensions per register, so a 64-dimension block of the four lanes l, l+16, l+32,
// l+48 fills 16 of the 32 zmm registers. Each output element goes through the same operations as in
// the 8-wide version (the order runs over positions, not dimensions), so the bits are the same.
// Requires AVX-512 F/BW/VL (Isa::Avx512); fold is scratch [n_q, kAttentionLaneFloats].
// The scores of 16 positions at a time are here too (attention_scores_avx512).
#pragma once
#include <cstdint>

#include "kernels/attention.h"

namespace nucleus {

void weighted_values_avx512(const AttentionArgs& a, const float* const* rows, float* fold);
void weighted_values_avx512(const AttentionArgs& a, const uint16_t* const* rows, float* fold);

// The scores of positions first_position .. in whole groups of 16, for every head of the group
// (a.scores[h · n + p − first], n = n_positions − first_position), when head_dim is 64, 128, 192
// or 256: each score is ggml_dot(q, key) · scale (then soft-capped) exactly as ops_x86.inc's
// ggml_dot_row computes it — lanes as four 16-float registers folded (0 + 2) + (1 + 3), and the 16
// positions' ggml_tree16 levels run together by shuffles across registers. Returns the first
// position not scored (the caller scores the rest); other head sizes score nothing.
int64_t attention_scores_avx512(const AttentionArgs& a, const float* keys);
int64_t attention_scores_avx512(const AttentionArgs& a, const uint16_t* keys);

}  // namespace nucleus
