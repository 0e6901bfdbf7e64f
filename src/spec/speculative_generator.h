// Speculative decoding of one sequence: each pass, the proposer drafts γ tokens, the target scores
// the last accepted token and the drafts — γ + 1 positions — in ONE forward pass, the rejection
// sampler keeps a prefix of the drafts plus one target token, and the target's KV is rolled back to
// what was kept. Every pass emits between 1 and γ + 1 tokens.
//
// The target's cache holds the sequence except its last token, which goes into the next pass's
// batch together with the drafts: row i of that batch is p at output position n_generated + i.
// p and q are the distributions after the request's sampler chain (temperature, top-k/top-p,
// penalties — the penalties see the drafts before each position as the sequence so far). Draws come
// from (seed, output position) streams (rejection_sampler.h), never from the pass structure.
//
// This drives a single sequence outside the batching engine (the CLI, tests, benchmarks).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"
#include "sampling/sampler.h"
#include "spec/proposer.h"
#include "spec/rejection_sampler.h"
#include "spec/speculative_runner.h"

namespace nucleus {

struct SpeculativeStats {
  int64_t num_passes = 0;       // target forward passes after the prefill
  int64_t num_proposed = 0;     // draft tokens verified
  int64_t num_accepted = 0;     // draft tokens kept
  int64_t num_emitted = 0;      // tokens produced (accepted + one per pass)
  double draft_seconds = 0.0;   // time in the proposer
  double target_seconds = 0.0;  // time in target forward passes (verification) and sampling

  double acceptance_rate() const {  // α
    return num_proposed > 0 ? static_cast<double>(num_accepted) / static_cast<double>(num_proposed) : 0.0;
  }
  double tokens_per_pass() const {
    return num_passes > 0 ? static_cast<double>(num_emitted) / static_cast<double>(num_passes) : 0.0;
  }
  void add(const SpeculativeStats& other);
};

// The verification rule; replaceable so tests can check that a broken rule is detected.
using SampledVerifier = VerificationResult (*)(std::span<const int32_t> draft_tokens, const float* target_probs,
                                               const float* draft_probs, int64_t n_vocab, uint64_t seed,
                                               uint64_t first_position);

class SpeculativeGenerator {
 public:
  // target and proposer must outlive the generator. params: the request's sampler chain (the seed
  // is given per start()). gamma ≥ 1: draft tokens per pass. n_ctx: the most positions a
  // sequence may reach; the cache holds n_ctx + gamma (drafts past the end are verified, never kept).
  SpeculativeGenerator(Model& target, Proposer& proposer, const SamplingParams& params, int32_t gamma, int64_t n_ctx,
                       int n_threads);

  // Begins a sequence: prefills the prompt (all but its last token; a prefix cached from the
  // previous sequence is reused). Stats restart. Throws Error for an empty prompt or one that,
  // with max_new_tokens, exceeds n_ctx.
  void start(std::span<const int32_t> prompt, int64_t max_new_tokens, uint64_t seed);
  // One target pass; returns the tokens it added (empty once max_new_tokens are generated).
  std::span<const int32_t> step();

  bool finished() const { return n_generated() >= max_new_tokens_; }
  int64_t n_generated() const { return static_cast<int64_t>(tokens_.size()) - n_prompt_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }  // prompt + outputs
  const SpeculativeStats& stats() const { return stats_; }
  // The draft tokens the last step() verified (its first stats().num_accepted-delta were kept).
  const std::vector<int32_t>& last_draft_tokens() const { return proposal_.tokens; }
  int32_t gamma() const { return gamma_; }
  void set_gamma(int32_t gamma);  // between sequences or passes (adaptive γ)
  void set_verifier(SampledVerifier verifier) { verifier_ = verifier; }

 private:
  Model& target_;
  Proposer& proposer_;
  SamplerChain chain_;
  int32_t gamma_;
  int64_t n_ctx_;
  SpeculativeRunner runner_;
  SampledVerifier verifier_ = verify_sampled;

  uint64_t seed_ = 0;
  int64_t n_prompt_ = 0;
  int64_t max_new_tokens_ = 0;
  std::vector<int32_t> tokens_;         // prompt + outputs
  std::vector<int32_t> context_;        // tokens_ + drafts: what the penalties see at each row
  std::vector<int32_t> batch_;          // [1 + n_draft] last token, drafts
  std::vector<float> target_probs_;     // [n_draft + 1, n_vocab]
  std::vector<int32_t> target_tokens_;  // greedy: [n_draft + 1]
  DraftProposal proposal_;
  SpeculativeStats stats_;
};

}  // namespace nucleus
