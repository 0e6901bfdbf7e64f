#include <cmath>
#include <random>

#include "core/error.h"
#include "core/rng.h"
#include "sampling/row_math.h"
#include "sampling/sampler.h"

namespace nucleus {

int32_t argmax(const float* logits, int64_t n) {
  // Two vectorizable passes (the maximum, then its first occurrence) beat one branchy pass.
  const float max = max_value(logits, static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    if (logits[i] == max) return static_cast<int32_t>(i);
  return 0;  // empty, or nothing but NaN
}

int32_t argmax_token(const Candidates& c) {
  size_t best = 0;
  for (size_t i = 1; i < c.size(); ++i)
    if (c.logits[i] > c.logits[best] || (c.logits[i] == c.logits[best] && c.ids[i] < c.ids[best])) best = i;
  return c.ids[best];
}

int32_t draw_token(Candidates& c, double u) {
  const double total = c.probability_mass();
  const size_t chosen = inverse_cdf(c.probs.data(), c.size(), u * total);
  if (chosen < c.size()) return c.ids[chosen];
  // Rounding left the threshold at the total: take the last token with non-zero probability.
  for (size_t i = c.size(); i-- > 0;)
    if (c.probs[i] > 0.0f) return c.ids[i];
  return c.ids[0];
}

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

uint64_t sample_seed(uint64_t seed, uint64_t index) {
  return index == 0 ? seed : splitmix64(seed ^ splitmix64(index));
}

void validate_sampling_params(const SamplingParams& p) {
  auto fail = [](const std::string& what) { throw Error("sampling: " + what); };
  if (!(p.temperature >= 0.0f)) fail("temperature must be >= 0, got " + std::to_string(p.temperature));
  if (!(p.top_p >= 0.0f && p.top_p <= 1.0f)) fail("top_p must be in [0, 1], got " + std::to_string(p.top_p));
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) fail("min_p must be in [0, 1], got " + std::to_string(p.min_p));
  if (!(p.typical_p >= 0.0f && p.typical_p <= 1.0f))
    fail("typical_p must be in [0, 1], got " + std::to_string(p.typical_p));
  if (!(p.repetition_penalty > 0.0f) || std::isinf(p.repetition_penalty))
    fail("repetition_penalty must be > 0, got " + std::to_string(p.repetition_penalty));
  if (!std::isfinite(p.frequency_penalty)) fail("frequency_penalty must be finite");
  if (!std::isfinite(p.presence_penalty)) fail("presence_penalty must be finite");
  if (p.penalty_last_n < -1) fail("penalty_last_n must be >= -1, got " + std::to_string(p.penalty_last_n));
  if (p.min_tokens < 0) fail("min_tokens must be >= 0, got " + std::to_string(p.min_tokens));
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0) fail("logit_bias token id " + std::to_string(id) + " is negative");
    if (std::isnan(bias) || bias == INFINITY) fail("logit_bias for token " + std::to_string(id) + " must be a number < +inf");
  }
}

SamplerChain::SamplerChain(const SamplingParams& params) {
  validate_sampling_params(params);
  seed_ = params.seed ? *params.seed : random_seed();
  greedy_ = params.temperature <= 0.0f;
  if (params.min_tokens > 0 && !params.end_of_generation_ids.empty())
    stages_.push_back(make_min_tokens_stage(params.end_of_generation_ids, params.min_tokens));
  const PenaltyParams penalties{params.repetition_penalty, params.frequency_penalty, params.presence_penalty,
                                params.penalty_last_n};
  const bool penalties_on = params.penalty_last_n != 0 && (params.repetition_penalty != 1.0f ||
                                                           params.frequency_penalty != 0.0f ||
                                                           params.presence_penalty != 0.0f);
  // Only the stages that would change something are built: an all-default chain is a bare draw.
  for (SamplerStageKind kind : params.order) {
    switch (kind) {
      case SamplerStageKind::logit_bias:
        if (!params.logit_bias.empty()) stages_.push_back(make_logit_bias_stage(params.logit_bias));
        break;
      case SamplerStageKind::penalties:
        if (penalties_on) stages_.push_back(make_penalties_stage(penalties));
        break;
      case SamplerStageKind::temperature:
        if (!greedy_ && params.temperature != 1.0f) stages_.push_back(make_temperature_stage(params.temperature));
        break;
      case SamplerStageKind::top_k:
        if (!greedy_ && params.top_k > 0) stages_.push_back(make_top_k_stage(params.top_k));
        break;
      case SamplerStageKind::top_p:
        if (!greedy_ && params.top_p < 1.0f) stages_.push_back(make_top_p_stage(params.top_p));
        break;
      case SamplerStageKind::min_p:
        if (!greedy_ && params.min_p > 0.0f) stages_.push_back(make_min_p_stage(params.min_p));
        break;
      case SamplerStageKind::typical_p:
        if (!greedy_ && params.typical_p < 1.0f) stages_.push_back(make_typical_p_stage(params.typical_p));
        break;
    }
  }
}

SamplerChain::SamplerChain(std::vector<std::unique_ptr<SamplerStage>> stages, uint64_t seed, bool greedy)
    : stages_(std::move(stages)), greedy_(greedy), seed_(seed) {}

void SamplerChain::run_stages(const float* logits, int64_t n_vocab, const SamplingContext& context) {
  candidates_.assign(logits, n_vocab);
  for (const auto& stage : stages_)
    if (!greedy_ || stage->edits_logits_only()) stage->apply(candidates_, context);
}

int32_t SamplerChain::sample(const float* logits, int64_t n_vocab, const SamplingContext& context) {
  if (greedy_ && stages_.empty()) return argmax(logits, n_vocab);  // no copy for plain greedy
  run_stages(logits, n_vocab, context);
  if (greedy_) return argmax_token(candidates_);
  return draw_token(candidates_, uniform_at(seed_, context.position));
}

const Candidates& SamplerChain::distribution(const float* logits, int64_t n_vocab, const SamplingContext& context) {
  run_stages(logits, n_vocab, context);
  candidates_.softmax();
  return candidates_;
}

std::string SamplerChain::describe() const {
  std::string text;
  for (const auto& stage : stages_) {
    if (greedy_ && !stage->edits_logits_only()) continue;
    text += stage->name();
    text += " → ";
  }
  return text + (greedy_ ? "argmax" : "draw");
}

}  // namespace nucleus
