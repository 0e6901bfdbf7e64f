#include "speculative/speculative_generator.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"

namespace nucleus {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

SpeculativeGenerator::SpeculativeGenerator(Model& target, Proposer& proposer, const SamplingParams& params,
                                           int32_t gamma, int64_t n_ctx, int n_threads)
    : target_(target), proposer_(proposer), chain_(params), gamma_(gamma), n_ctx_(n_ctx),
      runner_(target, n_ctx + gamma, n_threads) {
  set_gamma(gamma);
}

void SpeculativeGenerator::set_gamma(int32_t gamma) {
  if (gamma < 1) throw Error("speculative decoding: gamma must be at least 1");
  if (n_ctx_ + gamma > runner_.n_ctx()) throw Error("speculative decoding: gamma exceeds the one the cache was sized for");
  gamma_ = gamma;
}

void SpeculativeGenerator::start(std::span<const int32_t> prompt, int64_t max_new_tokens, uint64_t seed) {
  if (prompt.empty()) throw Error("speculative decoding: empty prompt");
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  if (max_new_tokens < 0 || n_prompt + max_new_tokens > n_ctx_)
    throw Error("prompt of " + std::to_string(n_prompt) + " tokens plus " + std::to_string(max_new_tokens) +
                " new tokens exceeds the context length " + std::to_string(n_ctx_));
  seed_ = seed;
  n_prompt_ = n_prompt;
  max_new_tokens_ = max_new_tokens;
  tokens_.assign(prompt.begin(), prompt.end());
  stats_ = SpeculativeStats{};
  const int64_t kept = runner_.keep_common_prefix(prompt, n_prompt - 1);
  if (kept < n_prompt - 1) runner_.feed(prompt.subspan(static_cast<size_t>(kept), static_cast<size_t>(n_prompt - 1 - kept)));
}

std::span<const int32_t> SpeculativeGenerator::step() {
  if (finished()) return {};
  const int64_t n_vocab = target_.hparams().n_vocab;
  const int64_t n_before = static_cast<int64_t>(tokens_.size());
  const auto first_position = static_cast<uint64_t>(n_generated());
  // Drafts beyond the budget could never be kept: the last token of the budget is the pass's own.
  const auto num_draft = static_cast<int32_t>(std::min<int64_t>(gamma_, max_new_tokens_ - n_generated() - 1));

  auto draft_start = std::chrono::steady_clock::now();
  proposal_.clear();
  if (num_draft > 0)
    proposer_.propose(DraftRequest{tokens_, n_prompt_, num_draft, seed_, first_position}, proposal_);
  const auto n_draft = static_cast<int32_t>(proposal_.tokens.size());
  if (n_draft > num_draft || (!proposal_.probs.empty() && proposal_.probs.size() != static_cast<size_t>(n_draft * n_vocab)))
    throw Error("proposer " + proposer_.name() + " returned a malformed proposal");
  stats_.draft_seconds += seconds_since(draft_start);

  auto target_start = std::chrono::steady_clock::now();
  batch_.assign(1, tokens_.back());
  batch_.insert(batch_.end(), proposal_.tokens.begin(), proposal_.tokens.end());
  const std::vector<float>& logits = runner_.feed(batch_, /*all_logits=*/true);  // [n_draft + 1, n_vocab]
  const VerificationResult result = verifier_.verify(chain_, std::span<const int32_t>(tokens_), proposal_,
                                                     logits.data(), n_vocab, seed_, first_position);

  // Keep the last token and the accepted drafts in the cache; the new token is the next pass's input.
  runner_.truncate(n_before + result.num_accepted);
  tokens_.insert(tokens_.end(), proposal_.tokens.begin(), proposal_.tokens.begin() + result.num_accepted);
  tokens_.push_back(result.token);
  stats_.target_seconds += seconds_since(target_start);

  ++stats_.num_passes;
  stats_.num_proposed += n_draft;
  stats_.num_accepted += result.num_accepted;
  stats_.num_emitted += result.num_accepted + 1;
  if (result.num_accepted < n_draft) ++stats_.num_rejected;
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(n_before));
}

}  // namespace nucleus
