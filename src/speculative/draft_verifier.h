// The verification step of one speculative pass, shared by the single-sequence generator and the
// batching engine: given the target's logits rows for the last accepted token and the drafts, it
// applies the request's sampler chain to each row (the penalties see the drafts before that row
// as the sequence so far) and decides, greedy or by rejection sampling, what is kept.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampler.h"
#include "speculative/proposer.h"
#include "speculative/rejection_sampler.h"

namespace nucleus {

// The verification rule; replaceable so tests can check that a broken rule is detected.
using SampledVerifier = VerificationResult (*)(std::span<const int32_t> draft_tokens, const float* target_probs,
                                               const float* draft_probs, int64_t n_vocab, uint64_t seed,
                                               uint64_t first_position);

class DraftVerifier {
 public:
  // sequence: the tokens so far (prompt + accepted outputs); logits: [n_draft + 1, n_vocab], row i
  // the target's logits after sequence + the first i drafts, at output position first_position + i.
  // seed: the request's (draws use its (seed, position) streams).
  VerificationResult verify(SamplerChain& chain, std::span<const int32_t> sequence, const DraftProposal& proposal,
                            const float* logits, int64_t n_vocab, uint64_t seed, uint64_t first_position);
  void set_verifier(SampledVerifier verifier) { verifier_ = verifier; }

 private:
  SampledVerifier verifier_ = verify_sampled;
  std::vector<int32_t> context_;        // sequence + drafts: what the penalties see at each row
  std::vector<float> target_probs_;     // [n_draft + 1, n_vocab]
  std::vector<int32_t> target_tokens_;  // greedy: [≤ n_draft + 1]
};

}  // namespace nucleus
