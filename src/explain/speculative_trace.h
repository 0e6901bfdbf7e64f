// Panel 3's data: a speculative generation pass by pass (what was drafted, what the target kept),
// the same prompt decoded plainly for the measured speedup, and the theoretical speedup curve
// (Leviathan et al. 2023): tokens per pass (1 − α^(γ+1)) / (1 − α), speedup that over (γc + 1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"
#include "sampling/sampling_params.h"
#include "speculative/proposer.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::explain {

enum class DraftStatus { accepted, rejected, corrected, bonus };
const char* draft_status_name(DraftStatus status);

struct PassToken {
  int32_t id = 0;
  std::string text;
  DraftStatus status = DraftStatus::accepted;
};

struct SpeculativePass {
  std::vector<PassToken> tokens;  // the drafts (accepted, then rejected), then the target's own token
  int32_t num_drafted = 0;
  int32_t num_accepted = 0;
  double running_alpha = 0.0;     // accepted / drafted over all passes so far
};

struct SpeedupPoint {
  double alpha = 0.0;
  double tokens_per_pass = 0.0;
  double speedup = 0.0;
};

struct SpeculativeTrace {
  std::string proposer;  // the proposer's name
  int32_t gamma = 0;
  std::vector<SpeculativePass> passes;
  std::string text;
  int64_t num_generated = 0;
  double alpha = 0.0;               // accepted / drafted
  double tokens_per_pass = 0.0;     // generated tokens / target passes
  double speculative_seconds = 0.0; // after the prefill
  double plain_seconds = 0.0;       // the same tokens by plain decoding, after the prefill
  double measured_speedup = 0.0;    // plain_seconds / speculative_seconds
  double cost_ratio = 0.0;          // c: one drafted token's time over one target pass's time
  std::vector<SpeedupPoint> theory; // α from 0 to 1 for this γ and c
};

// Expected tokens per target pass and wall-time speedup at acceptance rate α (DESIGN.md's formulas).
SpeedupPoint theoretical_speedup(double alpha, int32_t gamma, double cost_ratio);

// Runs speculative decoding of `prompt` with `proposer`, then plain decoding of the same prompt with
// the same params, seed and length. max_tokens ≥ 1; gamma ≥ 1; prompt + max_tokens + gamma must fit
// the model's context (the caller checks).
SpeculativeTrace trace_speculative(Model& target, Proposer& proposer, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                                   const SamplingParams& params, int32_t gamma, int64_t max_tokens, int n_threads);

}  // namespace nucleus::explain
