// The floating-point order of llama.cpp's CPU backend on AVX-512 (ggml's f32 dot product, its
// vector exp and the reductions around them), written out lane by lane in scalar code.
//
// Why: a quantized matmul rounds its activations to 8 bits (Q8_K, Q8_0), so a last-bit difference
// in an activation can move it across a rounding tie and change a logit by 1e-2. Matching
// llama.cpp's order op for op is what lets nucleus agree with it to ~1e-5 on K-quant files
// (tests/model_fidelity_test.cpp) instead of drifting by a flipped quant now and then.
// Every operator table (scalar, AVX2, AVX-512) uses these orders, so all of them give the same bits.
//
//   ggml_dot(x, y, n): 64 lanes, lane L summing x[i]·y[i] for i ≡ L (mod 64) by FMA over the
//     first n − n % 64 elements; lanes folded as (L, L+32) and (L+16, L+48), then the 16 remaining
//     lanes by ggml_tree16; the last n % 64 products FMA'd onto that sum in order.
//   ggml_tree16(v): _mm512_reduce_add_ps's tree: (v[i+8] + v[i]), then (+4), then (0+2, 1+3), then 0+1.
//   ggml_exp(x): ggml_v_expf (AVX-512 form): x = n·ln2 + b, a degree-5 polynomial in b, scaled by 2^n.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace nucleus {

constexpr int64_t kGgmlDotLanes = 64;  // elements per step of ggml's f32 dot product (4 × 16 lanes)

inline float ggml_tree16(const float* v) {
  float t3[8], t6[4];
  for (int i = 0; i < 8; ++i) t3[i] = v[i + 8] + v[i];
  for (int i = 0; i < 4; ++i) t6[i] = t3[i + 4] + t3[i];
  return (t6[0] + t6[2]) + (t6[1] + t6[3]);
}

// The 64 lane sums of ggml_dot folded to one value.
inline float ggml_fold64(const float* lanes) {
  float c[16];
  for (int l = 0; l < 16; ++l) c[l] = (lanes[l] + lanes[l + 32]) + (lanes[l + 16] + lanes[l + 48]);
  return ggml_tree16(c);
}

inline float ggml_dot(const float* x, const float* y, int64_t n) {
  float lanes[kGgmlDotLanes] = {};
  const int64_t whole = n / kGgmlDotLanes * kGgmlDotLanes;
  for (int64_t i = 0; i < whole; i += kGgmlDotLanes)
    for (int64_t l = 0; l < kGgmlDotLanes; ++l) lanes[l] = std::fma(x[i + l], y[i + l], lanes[l]);
  float sum = ggml_fold64(lanes);
  for (int64_t i = whole; i < n; ++i) sum = std::fma(x[i], y[i], sum);
  return sum;
}

inline float ggml_exp(float x) {
  if (std::isnan(x)) return x;
  const float shift = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, shift);
  const float n = z - shift;  // round(x · log2 e)
  if (std::fabs(n) > 192.0f) return n <= 0.0f ? 0.0f : std::numeric_limits<float>::infinity();
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                           std::fma(0x1.ffffecp-1f, b, 1.0f));
  return std::ldexp(j, static_cast<int>(n));  // exact, or rounded once where the result is subnormal
}

// silu(g)·u as ggml's swiglu computes it: silu by ggml_exp over whole 16-element chunks, by the
// library exp over the last n % 16 elements.
inline float ggml_silu_times(float g, float u, bool vector_chunk) {
  const float e = vector_chunk ? ggml_exp(0.0f - g) : std::exp(-g);
  return g / (1.0f + e) * u;
}

// Softmax of one head's scores over positions first..n_positions−1 (scores[p − first]), as
// ggml's soft_max does it over a KV row whose cell c holds position c: the maximum, then
// exp(score − max) by ggml_exp in chunks of 16 cells aligned to position 0 (cells outside the
// range are masked, exp 0), each chunk summed by ggml_tree16 into an f64 total, then every weight
// multiplied by (float)(1 / total).
inline void ggml_attention_softmax(float* scores, int64_t first, int64_t n_positions) {
  const int64_t n = n_positions - first;
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, scores[i]);
  double total = 0.0;
  for (int64_t chunk = first / 16 * 16; chunk < n_positions; chunk += 16) {
    float e[16];
    for (int64_t l = 0; l < 16; ++l) {
      const int64_t p = chunk + l;
      e[l] = p >= first && p < n_positions ? ggml_exp(scores[p - first] - max) : 0.0f;
      if (p >= first && p < n_positions) scores[p - first] = e[l];
    }
    total += static_cast<double>(ggml_tree16(e));
  }
  const float inverse = static_cast<float>(1.0 / total);
  for (int64_t i = 0; i < n; ++i) scores[i] *= inverse;
}

}  // namespace nucleus
