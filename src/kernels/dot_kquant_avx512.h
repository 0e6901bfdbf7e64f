// K-quant dot products with AVX-512 VNNI (dot_kquant_avx512.cpp), for the AVX-512 table.
#pragma once
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace nucleus {

float dot_q4_K_q8_K_avx512(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks);
float dot_q5_K_q8_K_avx512(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n_blocks);
float dot_q6_K_q8_K_avx512(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n_blocks);
void dotn_q4_K_q8_K_avx512(const BlockQ4_K* w, const BlockQ8_K* const* x, int n_tokens, int64_t n_blocks, float* out);
void dotn_q6_K_q8_K_avx512(const BlockQ6_K* w, const BlockQ8_K* const* x, int n_tokens, int64_t n_blocks, float* out);

}  // namespace nucleus
