// Draft-model proposer: a second, smaller model sharing the target's vocabulary drafts γ tokens
// autoregressively, each drawn from q = its distribution after the request's sampler chain.
// Each proposer is one sequence of a DraftBatch (speculative/draft_batch.h): on each call its cached
// prefix that still matches the sequence is kept (rejected drafts fall away) and only the rest is
// fed. Proposers sharing a DraftBatch report it as their batch group, so the engine drafts for
// all of its speculating requests in the same draft-model passes.
#pragma once
#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "speculative/draft_batch.h"
#include "speculative/proposer.h"

namespace nucleus {

// Throws Error naming the first difference (tokenizer model, vocabulary size, a token's text,
// BOS/EOS id) between the tokenizers of two model files; `draft_name` labels the message.
void check_same_vocabulary(const GgufFile& target, const GgufFile& draft, const std::string& draft_name);

class DraftModelProposer final : public Proposer {
 public:
  // One sequence of `batch`. params: the request's sampling parameters (the draft's q goes
  // through the same chain as the target's p; the seed is taken from each DraftRequest).
  DraftModelProposer(std::shared_ptr<DraftBatch> batch, const SamplingParams& params, std::string name);
  // A proposer drafting alone (its own DraftBatch); `draft` must outlive it.
  DraftModelProposer(Model& draft, const SamplingParams& params, int n_threads, std::string name);
  ~DraftModelProposer() override;
  DraftModelProposer(const DraftModelProposer&) = delete;
  DraftModelProposer& operator=(const DraftModelProposer&) = delete;

  std::string name() const override { return name_; }
  void propose(const DraftRequest& request, DraftProposal& proposal) override;
  const void* batch_group() const override { return batch_.get(); }
  void propose_batch(std::span<Proposer* const> members, std::span<const DraftRequest> requests,
                     std::span<DraftProposal* const> proposals) override;

  Model& model() { return batch_->model(); }

 private:
  DraftBatch::Job job(const DraftRequest& request, DraftProposal& proposal);

  std::shared_ptr<DraftBatch> batch_;
  int32_t sequence_;
  SamplerChain chain_;
  std::string name_;
  std::vector<int32_t> context_;  // the sequence plus the drafts so far, for the penalties
};

}  // namespace nucleus
