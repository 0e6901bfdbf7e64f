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
#include "speculative/proposer.h"
#include "speculative/draft_verifier.h"
#include "speculative/rejection_sampler.h"
#include "model/sequence_runner.h"
#include "speculative/speculative_stats.h"

namespace nucleus {

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
  void set_verifier(SampledVerifier verifier) { verifier_.set_verifier(verifier); }

 private:
  Model& target_;
  Proposer& proposer_;
  SamplerChain chain_;
  int32_t gamma_;
  int64_t n_ctx_;
  SequenceRunner runner_;
  DraftVerifier verifier_;

  uint64_t seed_ = 0;
  int64_t n_prompt_ = 0;
  int64_t max_new_tokens_ = 0;
  std::vector<int32_t> tokens_;         // prompt + outputs
  std::vector<int32_t> batch_;          // [1 + n_draft] last token, drafts
  DraftProposal proposal_;
  SpeculativeStats stats_;
};

}  // namespace nucleus
