#include <random>

#include "core/rng.h"
#include "sampling/sampler.h"

namespace nucleus {

int32_t argmax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

SamplerChain::SamplerChain(const SamplingParams& params) {
  seed_ = params.seed ? *params.seed : random_seed();
  greedy_ = params.temperature <= 0.0f;
  if (greedy_) return;
  if (params.temperature != 1.0f) stages_.push_back(make_temperature_stage(params.temperature));
  if (params.top_k > 0) stages_.push_back(make_top_k_stage(params.top_k));
  if (params.top_p < 1.0f) stages_.push_back(make_top_p_stage(params.top_p));
  if (params.min_p > 0.0f) stages_.push_back(make_min_p_stage(params.min_p));
}

int32_t SamplerChain::sample(const float* logits, int64_t n_vocab, uint64_t position) {
  if (greedy_) return argmax(logits, n_vocab);
  candidates_.assign(logits, n_vocab);
  for (const auto& stage : stages_) stage->apply(candidates_);
  candidates_.softmax();
  // Inverse-CDF draw over the surviving candidates in their current order.
  const double u = uniform_at(seed_, position);
  double cumulative = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += candidates_.probs[i];
    if (u < cumulative) return candidates_.ids[i];
  }
  // Rounding left u above the total: take the last token with non-zero probability.
  for (size_t i = candidates_.size(); i-- > 0;)
    if (candidates_.probs[i] > 0.0f) return candidates_.ids[i];
  return candidates_.ids[0];
}

}  // namespace nucleus
