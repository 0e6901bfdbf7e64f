// The stages that edit the logits of particular tokens: logit bias, the repetition / frequency /
// presence penalties, and the min_tokens ban of end-of-generation tokens. They never drop entries,
// and they also run under greedy decoding.
#include <algorithm>
#include <cmath>

#include "sampling/sampler.h"

namespace nucleus {

namespace {

// Marks that logits were edited: probs are stale and the ranking may have changed.
void logits_edited(Candidates& c) {
  c.has_probs = false;
  c.sorted = false;
}

class LogitBiasStage : public SamplerStage {
 public:
  // Entries for one id are summed; ids are kept sorted for Candidates::visit_ids.
  explicit LogitBiasStage(std::vector<std::pair<int32_t, float>> bias) {
    std::sort(bias.begin(), bias.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [id, value] : bias) {
      if (!ids_.empty() && ids_.back() == id) {
        biases_.back() += value;
        continue;
      }
      ids_.push_back(id);
      biases_.push_back(value);
    }
  }
  const char* name() const override { return "logit_bias"; }
  bool edits_logits_only() const override { return true; }
  void apply(Candidates& c, const SamplingContext&) const override {
    c.visit_ids(ids_, [&](size_t position, size_t j) { c.logits[position] += biases_[j]; });
    logits_edited(c);
  }

 private:
  std::vector<int32_t> ids_;    // ascending
  std::vector<float> biases_;   // [ids_.size()]
};

class PenaltiesStage : public SamplerStage {
 public:
  explicit PenaltiesStage(const PenaltyParams& params) : params_(params) {}
  const char* name() const override { return "penalties"; }
  bool edits_logits_only() const override { return true; }
  void apply(Candidates& c, const SamplingContext& context) const override {
    if (params_.last_n == 0 || context.tokens.empty()) return;
    // The window: the last `last_n` tokens of prompt + output (all of them for -1).
    const size_t window = params_.last_n < 0 ? context.tokens.size()
                                             : std::min(context.tokens.size(), static_cast<size_t>(params_.last_n));
    std::vector<int32_t>& tokens = c.scratch.tokens;
    tokens.assign(context.tokens.end() - static_cast<std::ptrdiff_t>(window), context.tokens.end());
    std::sort(tokens.begin(), tokens.end());
    // Run-length encode into (distinct ascending ids, counts).
    std::vector<int32_t>& counts = c.scratch.counts;
    counts.clear();
    size_t n_distinct = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (n_distinct > 0 && tokens[n_distinct - 1] == tokens[i]) {
        ++counts.back();
        continue;
      }
      tokens[n_distinct++] = tokens[i];
      counts.push_back(1);
    }
    tokens.resize(n_distinct);
    c.visit_ids(tokens, [&](size_t position, size_t j) {
      float& logit = c.logits[position];
      // Repetition (CTRL / llama.cpp / HF): divide a positive logit, multiply a negative one, so the
      // token always becomes less likely for a penalty > 1.
      logit = logit > 0.0f ? logit / params_.repetition_penalty : logit * params_.repetition_penalty;
      // Frequency and presence (OpenAI): subtractive, proportional to the count / once if present.
      logit -= static_cast<float>(counts[j]) * params_.frequency_penalty + params_.presence_penalty;
    });
    logits_edited(c);
  }

 private:
  PenaltyParams params_;
};

class MinTokensStage : public SamplerStage {
 public:
  MinTokensStage(std::vector<int32_t> end_of_generation_ids, int32_t min_tokens)
      : ids_(std::move(end_of_generation_ids)), min_tokens_(min_tokens) {
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  }
  const char* name() const override { return "min_tokens"; }
  bool edits_logits_only() const override { return true; }
  void apply(Candidates& c, const SamplingContext& context) const override {
    if (context.position >= static_cast<uint64_t>(std::max(min_tokens_, 0))) return;
    c.visit_ids(ids_, [&](size_t position, size_t) { c.logits[position] = -INFINITY; });
    logits_edited(c);
  }

 private:
  std::vector<int32_t> ids_;  // ascending
  int32_t min_tokens_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_logit_bias_stage(std::vector<std::pair<int32_t, float>> bias) {
  return std::make_unique<LogitBiasStage>(std::move(bias));
}
std::unique_ptr<SamplerStage> make_penalties_stage(const PenaltyParams& params) {
  return std::make_unique<PenaltiesStage>(params);
}
std::unique_ptr<SamplerStage> make_min_tokens_stage(std::vector<int32_t> end_of_generation_ids, int32_t min_tokens) {
  return std::make_unique<MinTokensStage>(std::move(end_of_generation_ids), min_tokens);
}

}  // namespace nucleus
