// Elementwise and normalization operators of the transformer block (f32).
#pragma once
#include <cstdint>

namespace nucleus {

// out[n] = x[n] / sqrt(mean(x²) + eps) * weight[n]   (out may alias x)
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);

// Rotary position embedding applied in place to one head vector x[head_dim]; only the first
// n_rot dimensions rotate. Pair i uses angle pos · base^(−2i/n_rot).
//   normal (llama): pairs (2i, 2i+1)
//   neox (qwen2):   pairs (i, i + n_rot/2)
void rope(float* x, int64_t n_rot, int64_t position, float freq_base, bool neox);

// In place: x = softmax(x) over n.
void softmax(float* x, int64_t n);

// out[n] = silu(gate[n]) * up[n]   (out may alias gate)
void swiglu(const float* gate, const float* up, float* out, int64_t n);

}  // namespace nucleus
