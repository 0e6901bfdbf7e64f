#include "model/moe_ffn.h"

#include <algorithm>
#include <numeric>

namespace nucleus {

void moe_ffn(const DotKernels& kernels, const OpsKernels& ops, const LayerSpec& spec, const LayerWeights& weights,
             const float* h, int64_t n_tokens, int64_t n_embd, float* out, int n_threads, MatmulScratch& matmul_scratch,
             MoeScratch& s) {
  const int64_t n_expert = spec.n_expert, n_used = spec.n_expert_used, n_ff = spec.n_ff;
  // Routing: softmax over every expert, then the n_used largest (ties: the lower id first).
  s.router_probs.resize(static_cast<size_t>(n_tokens * n_expert));
  matmul(kernels, weights.router, h, n_tokens, s.router_probs.data(), n_threads, matmul_scratch);
  s.chosen.resize(static_cast<size_t>(n_tokens * n_used));
  s.weights.resize(s.chosen.size());
  std::vector<int32_t> order(static_cast<size_t>(n_expert));
  std::vector<std::vector<int64_t>> routed(static_cast<size_t>(n_expert));  // per expert: token · n_used + slot
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* p = &s.router_probs[t * n_expert];  // [n_expert]
    ops.softmax(p, n_expert);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + n_used, order.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float sum = 0.0f;
    for (int64_t j = 0; j < n_used; ++j) sum += p[order[j]];
    const float denominator = std::max(sum, 6.103515625e-5f);  // llama.cpp's clamp (the f16 minimum normal)
    for (int64_t j = 0; j < n_used; ++j) {
      s.chosen[t * n_used + j] = order[j];
      s.weights[t * n_used + j] = p[order[j]] / denominator;
      routed[static_cast<size_t>(order[j])].push_back(t * n_used + j);
    }
  }
  // Each expert once, over every token routed to it.
  s.slot_out.resize(static_cast<size_t>(n_tokens * n_used * n_embd));
  for (int64_t e = 0; e < n_expert; ++e) {
    const std::vector<int64_t>& slots = routed[static_cast<size_t>(e)];
    if (slots.empty()) continue;
    const auto m = static_cast<int64_t>(slots.size());
    s.rows_in.resize(static_cast<size_t>(m * n_embd));
    for (int64_t r = 0; r < m; ++r) {
      const float* src = h + slots[r] / n_used * n_embd;
      std::copy(src, src + n_embd, &s.rows_in[r * n_embd]);
    }
    s.gate.resize(static_cast<size_t>(m * n_ff));
    s.up.resize(s.gate.size());
    s.rows_out.resize(s.rows_in.size());
    const ExpertWeights& x = weights.experts[static_cast<size_t>(e)];
    matmul(kernels, x.w_gate, s.rows_in.data(), m, s.gate.data(), n_threads, matmul_scratch);
    matmul(kernels, x.w_up, s.rows_in.data(), m, s.up.data(), n_threads, matmul_scratch);
    for (int64_t r = 0; r < m; ++r) ops.swiglu(&s.gate[r * n_ff], &s.up[r * n_ff], &s.gate[r * n_ff], n_ff);
    matmul(kernels, x.w_down, s.gate.data(), m, s.rows_out.data(), n_threads, matmul_scratch);
    for (int64_t r = 0; r < m; ++r) {
      const float w = s.weights[static_cast<size_t>(slots[r])];
      const float* y = &s.rows_out[r * n_embd];
      float* dst = &s.slot_out[slots[r] * n_embd];
      for (int64_t d = 0; d < n_embd; ++d) dst[d] = y[d] * w;
    }
  }
  // Σ over a token's experts in its own order (best first), as llama.cpp adds the expert views.
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* y = out + t * n_embd;
    std::copy(&s.slot_out[t * n_used * n_embd], &s.slot_out[t * n_used * n_embd] + n_embd, y);
    for (int64_t j = 1; j < n_used; ++j) ops.add(y, &s.slot_out[(t * n_used + j) * n_embd], n_embd);
  }
}

}  // namespace nucleus
