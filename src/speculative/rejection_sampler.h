// Verification of draft tokens against the target (Leviathan et al. 2023; Chen et al. 2023).
//
// Sampled: for draft token x_i drawn from q_i, accept with probability min(1, p_i(x_i) / q_i(x_i));
// on the first rejection draw the correction from norm(max(0, p_i − q_i)) and stop; when all are
// accepted draw a bonus token from p_{n_draft}. The emitted tokens are then distributed exactly as
// tokens sampled from p alone. A deterministic proposer has the one-hot q_i = [x_i], so acceptance is
// p_i(x_i) and the residual is p_i with x_i removed.
// Greedy: accept while the draft equals the target's argmax; the first mismatch (or the bonus) is
// the target's argmax — the output equals plain greedy decoding token for token.
//
// Random draws: a request's stream depends only on (seed, output position). At one position the
// accept test, the correction/bonus and the draft's own draw are different streams, so the three are
// independent. A draw whose result was discarded (a draft after the first rejection) influenced
// nothing that was kept, so a later pass may reuse its stream at that position.
#pragma once
#include <cstdint>
#include <span>

namespace nucleus {

// Streams of uniform_at(seed, position, stream). The correction and the bonus token use stream 0,
// the one plain sampling uses, so a pass with no drafts draws exactly as plain sampling does.
enum : uint64_t { kTargetStream = 0, kDraftStream = 1, kAcceptStream = 2 };

struct VerificationResult {
  int32_t num_accepted = 0;  // draft tokens kept, a prefix of the drafts
  int32_t token = -1;        // the correction (num_accepted < n_draft) or the bonus token
};

// draft_tokens: [n_draft]; target_probs: [n_draft + 1, n_vocab] p after the sampler chain, row i the
// distribution at output position first_position + i; draft_probs: [n_draft, n_vocab] q, or nullptr
// for a one-hot q. Rows need not be normalized (only ratios and proportional draws are used).
VerificationResult verify_sampled(std::span<const int32_t> draft_tokens, const float* target_probs,
                                  const float* draft_probs, int64_t n_vocab, uint64_t seed, uint64_t first_position);

// target_tokens: [n_draft + 1] the target's greedy choice at each position (at least up to the
// first mismatch; later entries are not read).
VerificationResult verify_greedy(std::span<const int32_t> draft_tokens, std::span<const int32_t> target_tokens);

// Inverse-CDF draw in id order from weights [n] (≥ 0, not necessarily normalized), u ∈ [0, 1).
// Never returns a zero-weight token unless every weight is zero (then token 0).
int32_t draw_from_weights(const float* weights, int64_t n, double u);

}  // namespace nucleus
