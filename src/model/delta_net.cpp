#include "model/delta_net.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace nucleus {

namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// Multiply-adds of a step's heads below which they stay on one thread: waking the others costs more.
constexpr int64_t kMinParallelHeadWork = 1 << 15;

// Σ a[i]·b[i] in 16 lanes (lane l takes i ≡ l mod 16), then the lanes halved pairwise: an order
// the source fixes (the build has -ffp-contract=off), so the result is the same at any vector width
// — and the compiler can keep the lanes in SIMD registers, which a serial sum forbids it (the
// serial dots were most of a Qwen3.5 prefill: docs/BENCHMARKS.md).
float dot(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += a[i + l] * b[i + l];
  for (int l = 0; i < n; ++i, ++l) lane[l] += a[i] * b[i];
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

}  // namespace

void delta_net_conv(const float* m, int64_t n, int64_t conv_dim, int64_t kernel, const float* weight, float* state,
                    float* out, float* window, WorkerPool* pool) {
  const int64_t history = kernel - 1;
  // window: [K−1+n, conv_dim] = the carried inputs, then this step's.
  std::memcpy(window, state, static_cast<size_t>(history * conv_dim) * sizeof(float));
  std::memcpy(window + history * conv_dim, m, static_cast<size_t>(n * conv_dim) * sizeof(float));
  // Each output is its own sum: tokens split over threads change no result.
  auto token = [&](int64_t t, int) {
    float* o = out + t * conv_dim;
    for (int64_t c = 0; c < conv_dim; ++c) {
      const float* w = weight + c * kernel;
      float sum = 0.0f;
      for (int64_t j = 0; j < kernel; ++j) sum += w[j] * window[(t + j) * conv_dim + c];
      o[c] = silu(sum);
    }
  };
  parallel_for(pool, n * conv_dim >= (1 << 16), n, Schedule::Static, token);
  std::memcpy(state, window + n * conv_dim, static_cast<size_t>(history * conv_dim) * sizeof(float));
}

void l2_normalize(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

void delta_net_recurrent_head(const DeltaNetSpec& spec, const DeltaNetInputs& in, int64_t head, float* state, float* out,
                              int64_t out_stride) {
  const int64_t S = spec.head_dim, Hv = spec.n_v_heads;
  const int64_t key_head = head % spec.n_k_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  for (int64_t t = 0; t < in.n_tokens; ++t) {
    const float* q = in.q + t * in.row_stride + key_head * S;
    const float* k = in.k + t * in.row_stride + key_head * S;
    const float* v = in.v + t * in.row_stride + head * S;
    const float decay = std::exp(in.g[t * Hv + head]);
    const float beta = in.beta[t * Hv + head];
    float* o = out + t * out_stride + head * S;
    for (int64_t b = 0; b < S; ++b) {  // row b of the state: value index b over every key index
      float* row = state + b * S;
      for (int64_t a = 0; a < S; ++a) row[a] *= decay;
      const float delta = beta * (v[b] - dot(row, k, S));
      for (int64_t a = 0; a < S; ++a) row[a] += k[a] * delta;
      o[b] = dot(row, q, S) * scale;
    }
  }
}

void delta_net_chunked_head(const DeltaNetSpec& spec, const DeltaNetInputs& in, int64_t head, float* state, float* out,
                            int64_t out_stride, int64_t chunk_size, std::vector<float>& scratch) {
  const int64_t S = spec.head_dim, Hv = spec.n_v_heads;
  const int64_t key_head = head % spec.n_k_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  const int64_t C = std::max<int64_t>(1, chunk_size);
  // scratch: G [C] running log decay, KK [C, C] e^{G_t−G_s} k_t·k_s (s < t), QK [C, C] e^{G_t−G_s} q_t·k_s
  // (s ≤ t), delta [C, S].
  scratch.resize(static_cast<size_t>(C + 2 * C * C + C * S));
  float* G = scratch.data();
  float* KK = G + C;
  float* QK = KK + C * C;
  float* delta = QK + C * C;
  auto q_of = [&](int64_t t) { return in.q + t * in.row_stride + key_head * S; };
  auto k_of = [&](int64_t t) { return in.k + t * in.row_stride + key_head * S; };
  for (int64_t start = 0; start < in.n_tokens; start += C) {
    const int64_t n = std::min(C, in.n_tokens - start);
    float running = 0.0f;
    for (int64_t t = 0; t < n; ++t) G[t] = running += in.g[(start + t) * Hv + head];
    for (int64_t t = 0; t < n; ++t) {
      const float* kt = k_of(start + t);
      const float* qt = q_of(start + t);
      for (int64_t s = 0; s <= t; ++s) {
        const float decay = std::exp(G[t] - G[s]);
        const float* ks = k_of(start + s);
        if (s < t) KK[t * C + s] = decay * dot(kt, ks, S);
        QK[t * C + s] = decay * dot(qt, ks, S);
      }
    }
    // δ_t = β_t (v_t − e^{G_t} M_0ᵀ k_t) − β_t Σ_{s<t} KK[t][s] δ_s, in order of t.
    for (int64_t t = 0; t < n; ++t) {
      const float* kt = k_of(start + t);
      const float* vt = in.v + (start + t) * in.row_stride + head * S;
      const float beta = in.beta[(start + t) * Hv + head];
      const float gamma = std::exp(G[t]);
      float* dt = delta + t * S;
      for (int64_t b = 0; b < S; ++b) dt[b] = vt[b] - gamma * dot(state + b * S, kt, S);
      for (int64_t s = 0; s < t; ++s) {
        const float coefficient = KK[t * C + s];
        const float* ds = delta + s * S;
        for (int64_t b = 0; b < S; ++b) dt[b] -= coefficient * ds[b];
      }
      for (int64_t b = 0; b < S; ++b) dt[b] *= beta;
    }
    // o_t = (e^{G_t} M_0ᵀ q_t + Σ_{s≤t} QK[t][s] δ_s) / √S
    for (int64_t t = 0; t < n; ++t) {
      const float* qt = q_of(start + t);
      const float gamma = std::exp(G[t]);
      float* o = out + (start + t) * out_stride + head * S;
      for (int64_t b = 0; b < S; ++b) o[b] = gamma * dot(state + b * S, qt, S);
      for (int64_t s = 0; s <= t; ++s) {
        const float coefficient = QK[t * C + s];
        const float* ds = delta + s * S;
        for (int64_t b = 0; b < S; ++b) o[b] += coefficient * ds[b];
      }
      for (int64_t b = 0; b < S; ++b) o[b] *= scale;
    }
    // M ← e^{G_last} M_0 + Σ_s e^{G_last−G_s} k_s δ_sᵀ
    const float gamma_last = std::exp(G[n - 1]);
    for (int64_t b = 0; b < S; ++b) {
      float* row = state + b * S;
      for (int64_t a = 0; a < S; ++a) row[a] *= gamma_last;
    }
    for (int64_t s = 0; s < n; ++s) {
      const float decay = std::exp(G[n - 1] - G[s]);
      const float* ks = k_of(start + s);
      const float* ds = delta + s * S;
      for (int64_t b = 0; b < S; ++b) {
        float* row = state + b * S;
        const float d = decay * ds[b];
        for (int64_t a = 0; a < S; ++a) row[a] += ks[a] * d;
      }
    }
  }
}

void delta_net_recurrent(const DeltaNetSpec& spec, const DeltaNetInputs& in, float* states, float* out, WorkerPool* pool) {
  const int64_t S = spec.head_dim, out_stride = spec.value_dim();
  parallel_for(pool, in.n_tokens * 4 * S * S >= kMinParallelHeadWork, spec.n_v_heads, Schedule::Static, [&](int64_t j, int) {
    delta_net_recurrent_head(spec, in, j, states + j * S * S, out, out_stride);
  });
}

void delta_net_chunked(const DeltaNetSpec& spec, const DeltaNetInputs& in, float* states, float* out, WorkerPool* pool,
                       int64_t chunk_size) {
  const int64_t S = spec.head_dim, out_stride = spec.value_dim();
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool ? pool->n_threads() : 1));
  parallel_for(pool, in.n_tokens * 4 * S * S >= kMinParallelHeadWork, spec.n_v_heads, Schedule::Static, [&](int64_t j, int thread) {
    std::vector<float>& mine = scratch[static_cast<size_t>(thread)];
    delta_net_chunked_head(spec, in, j, states + j * S * S, out, out_stride, chunk_size, mine);
  });
}

}  // namespace nucleus
