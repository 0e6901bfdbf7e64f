// Scalar reference dot products: simple, obviously correct, the ground truth for SIMD tests.
#include <cmath>

#include "core/fp16.h"
#include "kernels/dot.h"

namespace nucleus {

namespace {

float dot_f32(const float* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

float dot_f16_f32(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += f16_to_f32(w[i]) * x[i];
  return sum;
}

float dot_bf16_f32(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += bf16_to_f32(w[i]) * x[i];
  return sum;
}

// Q8_0: 8 lanes of 4 consecutive values, one fused multiply-add per block and lane, then a fixed
// pairwise reduction — the order of llama.cpp's AVX2 kernel, which its reference logits follow
// (this one model family amplifies summation-order differences up to 3e-2 in the logits).
float reduce_lanes(const float lanes[8]) {
  const float a0 = lanes[0] + lanes[4], a1 = lanes[1] + lanes[5], a2 = lanes[2] + lanes[6], a3 = lanes[3] + lanes[7];
  return (a0 + a2) + (a1 + a3);
}

float dot_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  float lanes[8] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(w[b].d) * f16_to_f32(x[b].d);
    for (int lane = 0; lane < 8; ++lane) {
      int32_t isum = 0;
      for (int j = 4 * lane; j < 4 * lane + 4; ++j) isum += static_cast<int32_t>(w[b].qs[j]) * x[b].qs[j];
      lanes[lane] = std::fma(static_cast<float>(isum), d, lanes[lane]);
    }
  }
  return reduce_lanes(lanes);
}

// Q4_0: per block the exact integer sum, then one fused multiply-add with the block's scale
// product (the order of llama.cpp's repacked Q4_0 kernels).
float dot_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    // Byte j holds value j in its low nibble and value j + 16 in its high nibble. (Written as
    // one loop over 16 bytes: a 32-value loop indexing qs[j − 16] was miscompiled by GCC 12 -O3.)
    for (int j = 0; j < 16; ++j) {
      isum += ((w[b].qs[j] & 0x0f) - 8) * x[b].qs[j];
      isum += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(w[b].d) * f16_to_f32(x[b].d), acc);
  }
  return acc;
}

// Σ_j m_j · (Σ of activations in sub-block j), the correction for the mins of Q4_K/Q5_K.
int32_t mins_dot_bsums(const uint8_t* mins, const int16_t* bsums) {
  int32_t sum = 0;
  for (int j = 0; j < 8; ++j) sum += mins[j] * (bsums[2 * j] + bsums[2 * j + 1]);
  return sum;
}

float dot_q4_K_q8_K(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) q4k_scale_min(j, w[b].scales, &sc[j], &m[j]);
    int32_t sumi = 0;
    for (int chunk = 0; chunk < 4; ++chunk) {
      int32_t s1 = 0, s2 = 0;
      for (int l = 0; l < 32; ++l) {
        s1 += (w[b].qs[32 * chunk + l] & 0xF) * x[b].qs[64 * chunk + l];
        s2 += (w[b].qs[32 * chunk + l] >> 4) * x[b].qs[64 * chunk + 32 + l];
      }
      sumi += sc[2 * chunk] * s1 + sc[2 * chunk + 1] * s2;
    }
    const float d = x[b].d * f16_to_f32(w[b].d), dmin = x[b].d * f16_to_f32(w[b].dmin);
    sum += d * static_cast<float>(sumi) - dmin * static_cast<float>(mins_dot_bsums(m, x[b].bsums));
  }
  return sum;
}

float dot_q5_K_q8_K(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) q4k_scale_min(j, w[b].scales, &sc[j], &m[j]);
    int32_t sumi = 0;
    for (int chunk = 0; chunk < 4; ++chunk) {
      int32_t s1 = 0, s2 = 0;
      for (int l = 0; l < 32; ++l) {
        const int q1 = (w[b].qs[32 * chunk + l] & 0xF) | (((w[b].qh[l] >> (2 * chunk)) & 1) << 4);
        const int q2 = (w[b].qs[32 * chunk + l] >> 4) | (((w[b].qh[l] >> (2 * chunk + 1)) & 1) << 4);
        s1 += q1 * x[b].qs[64 * chunk + l];
        s2 += q2 * x[b].qs[64 * chunk + 32 + l];
      }
      sumi += sc[2 * chunk] * s1 + sc[2 * chunk + 1] * s2;
    }
    const float d = x[b].d * f16_to_f32(w[b].d), dmin = x[b].d * f16_to_f32(w[b].dmin);
    sum += d * static_cast<float>(sumi) - dmin * static_cast<float>(mins_dot_bsums(m, x[b].bsums));
  }
  return sum;
}

float dot_q6_K_q8_K(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t group[16] = {};  // Σ q·x over each group of 16 values, q signed
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = w[b].ql + 64 * half;
      const uint8_t* qh = w[b].qh + 32 * half;
      const int8_t* xq = x[b].qs + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        group[8 * half + l / 16] += q1 * xq[l];
        group[8 * half + 2 + l / 16] += q2 * xq[l + 32];
        group[8 * half + 4 + l / 16] += q3 * xq[l + 64];
        group[8 * half + 6 + l / 16] += q4 * xq[l + 96];
      }
    }
    int32_t sumi = 0;
    for (int g = 0; g < 16; ++g) sumi += w[b].scales[g] * group[g];
    sum += x[b].d * f16_to_f32(w[b].d) * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace

const DotKernels& scalar_dot_kernels() {
  static const DotKernels table = [] {
    DotKernels t{Isa::Scalar,   dot_f32,       dot_f16_f32,   dot_bf16_f32, dot_q8_0_q8_0,
                 dot_q4_0_q8_0, dot_q4_K_q8_K, dot_q5_K_q8_K, dot_q6_K_q8_K};
    t.packed_q4_0 = packed_q4_0_scalar;
    t.packed_q8_0 = packed_q8_0_scalar;
    return t;
  }();
  return table;
}

}  // namespace nucleus
