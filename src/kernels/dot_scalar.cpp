// Scalar reference dot products: simple, obviously correct, the ground truth for SIMD tests.
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

float dot_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += static_cast<int32_t>(w[b].qs[j]) * x[b].qs[j];
    sum += static_cast<float>(isum) * (f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
  }
  return sum;
}

float dot_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      isum += ((w[b].qs[j] & 0x0f) - 8) * x[b].qs[j];
      isum += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + kQK4_0 / 2];
    }
    sum += static_cast<float>(isum) * (f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
  }
  return sum;
}

}  // namespace

const DotKernels& scalar_dot_kernels() {
  static const DotKernels table{Isa::Scalar, dot_f32, dot_f16_f32, dot_bf16_f32, dot_q8_0_q8_0, dot_q4_0_q8_0};
  return table;
}

}  // namespace nucleus
