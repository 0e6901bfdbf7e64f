// Measurements behind `nucleus bench spec`: plain decoding speed, speculative decoding speed per γ
// with its acceptance figures, the cost of a verification pass against a one-token step, and the
// speedup the theory predicts from the measured α and c (Leviathan et al. 2023, eq. 1 and thm 3.8).
#pragma once
#include <cstdint>
#include <vector>

#include "model/model.h"
#include "sampling/sampling_params.h"
#include "speculative/proposer.h"
#include "speculative/speculative_stats.h"

namespace nucleus {

// Expected speedup of speculative over plain decoding: (1 − α^(γ+1)) / ((1 − α)(γc + 1)), where
// α is the per-draft acceptance probability and c the draft's cost per token relative to the
// target's (a verification pass is assumed to cost one target step). α = 1 gives (γ + 1)/(γc + 1).
double predicted_speedup(double alpha, int32_t gamma, double c);

struct DecodeTiming {
  int64_t n_tokens = 0;  // generated after the prompt
  double seconds = 0.0;  // the decode loop only (prefill excluded)
  double seconds_per_token() const { return n_tokens > 0 ? seconds / static_cast<double>(n_tokens) : 0.0; }
};

// Plain decoding of n_tokens after `prompt` with the sampler chain `params`, one token per pass.
DecodeTiming time_plain_decode(Model& model, const std::vector<int32_t>& prompt, int64_t n_tokens,
                               const SamplingParams& params, int n_threads);

struct SpeculativeTiming {
  DecodeTiming decode;     // the step loop (prefill excluded)
  SpeculativeStats stats;  // proposer time is in stats.draft_seconds
  std::vector<int32_t> tokens;  // generated
};

SpeculativeTiming time_speculative_decode(Model& target, Proposer& proposer, int32_t gamma,
                                          const std::vector<int32_t>& prompt, int64_t n_tokens,
                                          const SamplingParams& params, int n_threads);

// A forward pass over n_tokens new tokens after a cached prompt against a one-token pass at the same
// position, timed back to back in each round (n_tokens = γ + 1, logits for every token as a
// verification pass needs them).
struct VerificationCost {
  double ratio = 0.0;            // median over the rounds of (n-token pass / one-token pass)
  double one_token_ms = 0.0;     // medians of the two kinds of pass
  double n_token_ms = 0.0;
  double one_token_min_ms = 0.0;  // the fastest of each kind: the least disturbed on a shared host
  double n_token_min_ms = 0.0;
  double min_ratio() const { return one_token_min_ms > 0 ? n_token_min_ms / one_token_min_ms : 0.0; }
};

// `repetitions` rounds after one warm-up round. With profiles given, each kind of pass is profiled
// (Model::set_profile) over all its timed rounds.
VerificationCost verification_cost(Model& model, const std::vector<int32_t>& prompt, int32_t n_tokens, int repetitions,
                                   int n_threads, StepProfile* one_token_profile = nullptr,
                                   StepProfile* n_token_profile = nullptr);

}  // namespace nucleus
