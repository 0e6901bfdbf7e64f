// Proposers of speculative decoding: cheap guesses of the next γ tokens that the target model
// then verifies in one forward pass (rejection_sampler.h decides what is kept).
//
// A proposer sees the sequence so far and returns up to γ draft tokens, with the distribution q
// each was drawn from (after the request's sampler chain) — or no distributions when it proposes
// deterministically (n-gram lookup), which the rejection sampler treats as a one-hot q. A proposer
// keeps whatever per-sequence state it needs (e.g. a draft model's KV cache) and reconciles it with
// the tokens it is shown on each call, so rejected drafts need no explicit notice.
// Ownership: the caller owns the proposer; a proposer serves one sequence at a time. Proposers
// that can draft for several sequences together (one draft-model pass for all) report the same
// batch group, and the engine hands the whole group to one propose_batch call.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nucleus {

struct DraftRequest {
  std::span<const int32_t> tokens;  // the sequence so far: prompt, then accepted outputs
  int64_t n_prompt = 0;             // how many of `tokens` are the prompt
  int32_t num_draft_tokens = 0;     // γ for this pass: propose at most this many
  uint64_t seed = 0;                // the request's seed: draws use uniform_at(seed, position, kDraftStream)
  uint64_t first_position = 0;      // output position of the first draft token
};

struct DraftProposal {
  std::vector<int32_t> tokens;  // [n_draft] n_draft ≤ num_draft_tokens; may be empty
  std::vector<float> probs;     // [n_draft, n_vocab] q at each draft position; empty: one-hot q
  void clear() {
    tokens.clear();
    probs.clear();
  }
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;  // e.g. "ngram[1,3]", "draft:model.gguf", "self:4"
  virtual void propose(const DraftRequest& request, DraftProposal& proposal) = 0;

  // Proposers returning the same non-null group can be drafted for together. Default: alone.
  virtual const void* batch_group() const { return nullptr; }
  // Fills *proposals[i] for requests[i] of members[i]; every member shares this one's batch
  // group (this one among them). Default: each member proposes on its own.
  virtual void propose_batch(std::span<Proposer* const> members, std::span<const DraftRequest> requests,
                             std::span<DraftProposal* const> proposals) {
    for (size_t i = 0; i < members.size(); ++i) members[i]->propose(requests[i], *proposals[i]);
  }
};

}  // namespace nucleus
