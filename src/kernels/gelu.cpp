#include "kernels/gelu.h"

#include <cmath>
#include <vector>

#include "core/fp16.h"

namespace nucleus {

namespace {

// [65536] f32 of f16(gelu_tanh_f32(f32(h))) for every f16 bit pattern h: immutable once built.
const float* gelu_f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h)
      t[h] = f16_to_f32(f32_to_f16(gelu_tanh_f32(f16_to_f32(static_cast<uint16_t>(h)))));
    return t;
  }();
  return table.data();
}

}  // namespace

float gelu_tanh_f32(float x) {
  const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
  const float coef_a = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

float gelu(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return gelu_f16_table()[f32_to_f16(x)];
}

void gelu_row(const float* x, float* out, int64_t n) {
  const float* table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    out[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : table[f32_to_f16(v)];
  }
}

void geglu_row(const float* gate, const float* up, float* out, int64_t n) {
  const float* table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float a = g <= -10.0f ? 0.0f : g >= 10.0f ? g : table[f32_to_f16(g)];
    out[i] = a * up[i];
  }
}

}  // namespace nucleus
