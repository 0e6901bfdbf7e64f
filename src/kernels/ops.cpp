// Scalar reference operators: simple, obviously correct, the ground truth for the SIMD tables.
#include "kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/fp16.h"
#include "kernels/ggml_order.h"
#include "kernels/rope_table.h"

namespace nucleus {

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  // As llama.cpp (ggml's rms_norm): each square rounded to f32, the sum kept in f64 (the mean of
  // squares is the one reduction where f32 drift shows). Rounding the squares matters: a Q4_0
  // embedding row is d·q with q in -8..7, so after the norm a Q8_0 activation block lands exactly
  // on x·127/amax = ±63.5 for q = ±4, and a scale one ulp off flips those quants. Exact f64 squares
  // gave the 1-ulp-different scale for some tokens and up to 4.7e-2 logit error against llama.cpp.
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void rope(float* x, int64_t n_rot, int64_t position, float freq_base, bool neox) {
  RopeParams params;
  params.n_rot = n_rot;
  params.freq_base = freq_base;
  const int64_t half = n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float theta = rope_angle(position, i, params);
    const float c = std::cos(theta), s = std::sin(theta);
    const int64_t a = neox ? i : 2 * i;
    const int64_t b = neox ? i + half : 2 * i + 1;
    const float x0 = x[a], x1 = x[b];
    // llama.cpp's rounding (its rotate_pairs as GCC contracts it): one product rounded first, the
    // other fused into the sum — x0·cos and x0·sin are the fused ones.
    x[a] = std::fma(x0, c, -(x1 * s));
    x[b] = std::fma(x0, s, x1 * c);
  }
}

void softmax(float* x, int64_t n) {
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t whole_chunks = n / 16 * 16;  // ggml_order.h: vector exp over chunks of 16
  for (int64_t i = 0; i < n; ++i) out[i] = ggml_silu_times(gate[i], up[i], i < whole_chunks);
}

namespace {

// The table form of rope(): fma(x[a], C[a], x[b]·S[a]) = fma(x0, cos, −(x1·sin)) and
// fma(x[a], S[b], x[b]·C[b]) = fma(x0, sin, x1·cos), rounded as rope() rounds them.
void rope_heads(float* x, int64_t n_heads, int64_t head_dim, const float* cos_sin, int64_t n_rot, bool neox) {
  const float* c = cos_sin;          // [n_rot]
  const float* s = cos_sin + n_rot;  // [n_rot]
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t a = neox ? i : 2 * i;
      const int64_t b = neox ? i + half : 2 * i + 1;
      const float x0 = v[a], x1 = v[b];
      v[a] = std::fma(x0, c[a], x1 * s[a]);
      v[b] = std::fma(x0, s[b], x1 * c[b]);
    }
  }
}

void add(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// Key/value elements as f32: stored f32 as is, stored f16 widened exactly.
inline float widen(float x) { return x; }
inline float widen(uint16_t x) { return f16_to_f32(x); }

// llama.cpp's decode order (ggml_order.h): each score a ggml_dot over head_dim, the softmax over
// 16-position chunks, and out[d] = Σ_p weight[p]·value[p][d] in 64 lanes by p mod 64.
template <typename T>
void attention_over(const AttentionArgs& a, const T* keys, const T* values) {
  const int64_t d_n = a.head_dim;
  const int64_t first = a.first_position, n_pos = a.n_positions - a.first_position;
  std::vector<float> key(static_cast<size_t>(d_n));
  for (int64_t p = first; p < a.n_positions; ++p) {
    const T* row = attention_row(keys, a, p);
    for (int64_t d = 0; d < d_n; ++d) key[static_cast<size_t>(d)] = widen(row[d]);
    for (int64_t h = 0; h < a.n_q; ++h) {
      const float score = ggml_dot(a.q + h * d_n, key.data(), d_n) * a.scale;
      a.scores[h * n_pos + (p - first)] = a.softcap > 0.0f ? softcap_score(score, a.softcap) : score;
    }
  }
  for (int64_t h = 0; h < a.n_q; ++h) ggml_attention_softmax(a.scores + h * n_pos, first, a.n_positions);
  std::vector<float> lanes(static_cast<size_t>(kGgmlDotLanes * d_n));  // [64, head_dim]
  for (int64_t h = 0; h < a.n_q; ++h) {
    std::fill(lanes.begin(), lanes.end(), 0.0f);
    for (int64_t p = first; p < a.n_positions; ++p) {
      const T* value = attention_row(values, a, p);
      const float weight = a.scores[h * n_pos + (p - first)];
      float* lane = &lanes[static_cast<size_t>(p % kGgmlDotLanes * d_n)];
      for (int64_t d = 0; d < d_n; ++d) lane[d] = std::fma(weight, widen(value[d]), lane[d]);
    }
    for (int64_t d = 0; d < d_n; ++d) {
      float column[kGgmlDotLanes];
      for (int64_t l = 0; l < kGgmlDotLanes; ++l) column[l] = lanes[static_cast<size_t>(l * d_n + d)];
      a.out[h * d_n + d] = ggml_fold64(column);
    }
  }
}

void attention(const AttentionArgs& a) { attention_over(a, a.keys, a.values); }
void attention_f16(const AttentionArgs& a) { attention_over(a, a.keys_f16, a.values_f16); }

void exp_row(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}

}  // namespace

const OpsKernels& scalar_ops_kernels() {
  static const OpsKernels table{Isa::Scalar, rms_norm, rope_heads, softmax, swiglu, add, attention, attention_f16, exp_row};
  return table;
}

}  // namespace nucleus
