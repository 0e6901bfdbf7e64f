// The weighted sum of value rows in llama.cpp's order (ops_x86.inc's weighted_values) with 512-bit
// registers: 16 dimensions per register, so a 64-dimension block of the four lanes l, l+16, l+32,
// l+48 fills 16 of the 32 zmm registers. Each output element goes through the same operations as in
// the 8-wide version (the order runs over positions, not dimensions), so the bits are the same.
// Requires AVX-512 F/BW/VL (Isa::Avx512); fold is scratch [n_q, kAttentionLaneFloats].
#pragma once
#include <cstdint>

#include "kernels/attention.h"

namespace nucleus {

void weighted_values_avx512(const AttentionArgs& a, const float* const* rows, float* fold);
void weighted_values_avx512(const AttentionArgs& a, const uint16_t* const* rows, float* fold);

}  // namespace nucleus
