#include "speculative/draft_verifier.h"

namespace nucleus {

VerificationResult DraftVerifier::verify(SamplerChain& chain, std::span<const int32_t> sequence,
                                         const DraftProposal& proposal, const float* logits, int64_t n_vocab,
                                         uint64_t seed, uint64_t first_position) {
  const auto n_draft = static_cast<int32_t>(proposal.tokens.size());
  const auto n_before = sequence.size();
  context_.assign(sequence.begin(), sequence.end());
  context_.insert(context_.end(), proposal.tokens.begin(), proposal.tokens.end());
  auto context_at = [&](int32_t i) {  // the sequence before row i's token
    return SamplingContext{std::span<const int32_t>(context_).first(n_before + static_cast<size_t>(i)),
                           first_position + static_cast<uint64_t>(i)};
  };
  auto row = [&](int32_t i) { return logits + static_cast<int64_t>(i) * n_vocab; };

  if (chain.greedy()) {
    // Rows only up to the first mismatch are needed.
    target_tokens_.clear();
    for (int32_t i = 0; i <= n_draft; ++i) {
      target_tokens_.push_back(chain.sample(row(i), n_vocab, context_at(i)));
      if (i < n_draft && target_tokens_.back() != proposal.tokens[static_cast<size_t>(i)]) break;
    }
    return verify_greedy(proposal.tokens, target_tokens_);
  }
  target_probs_.assign(static_cast<size_t>((n_draft + 1) * n_vocab), 0.0f);
  for (int32_t i = 0; i <= n_draft; ++i) {
    const Candidates& p = chain.distribution(row(i), n_vocab, context_at(i));
    float* out = target_probs_.data() + static_cast<int64_t>(i) * n_vocab;
    for (size_t j = 0; j < p.size(); ++j) out[p.ids[j]] = p.probs[j];
  }
  return verifier_(proposal.tokens, target_probs_.data(), proposal.probs.empty() ? nullptr : proposal.probs.data(),
                   n_vocab, seed, first_position);
}

}  // namespace nucleus
