// Counters of speculative decoding, per request and summed over an engine or a benchmark run.
#pragma once
#include <cstdint>

namespace nucleus {

struct SpeculativeStats {
  int64_t num_passes = 0;       // target forward passes that verified drafts (or could have)
  int64_t num_proposed = 0;     // draft tokens verified
  int64_t num_accepted = 0;     // draft tokens kept
  int64_t num_emitted = 0;      // tokens produced (accepted + one per pass)
  int64_t num_rejected = 0;     // passes that ended on a rejected draft (the drafts after it were never tested)
  double draft_seconds = 0.0;   // time in the proposer
  double target_seconds = 0.0;  // time in target forward passes (verification) and sampling

  // Accepted / proposed (vLLM's draft acceptance rate): counts the drafts after a rejection,
  // which were never tested, as failures.
  double acceptance_rate() const {
    return num_proposed > 0 ? static_cast<double>(num_accepted) / static_cast<double>(num_proposed) : 0.0;
  }
  // α of Leviathan et al.: the probability that a tested draft is accepted, estimated from the
  // tested drafts only (each pass tests drafts up to and including its first rejection). This is
  // the α of the expected tokens per pass (1 − α^(γ+1)) / (1 − α).
  double alpha() const {
    const int64_t tested = num_accepted + num_rejected;
    return tested > 0 ? static_cast<double>(num_accepted) / static_cast<double>(tested) : 0.0;
  }
  double tokens_per_pass() const {
    return num_passes > 0 ? static_cast<double>(num_emitted) / static_cast<double>(num_passes) : 0.0;
  }
  void add(const SpeculativeStats& other) {
    num_passes += other.num_passes;
    num_proposed += other.num_proposed;
    num_accepted += other.num_accepted;
    num_emitted += other.num_emitted;
    num_rejected += other.num_rejected;
    draft_seconds += other.draft_seconds;
    target_seconds += other.target_seconds;
  }
};

}  // namespace nucleus
