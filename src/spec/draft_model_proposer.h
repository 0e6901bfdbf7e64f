// Draft-model proposer: a second, smaller model sharing the target's vocabulary drafts γ tokens
// autoregressively, each drawn from q = its distribution after the request's sampler chain.
// It keeps its own rollback-able KV cache and, on each call, keeps the cached prefix that still
// matches the sequence (rejected drafts fall away) and feeds only the rest.
#pragma once
#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "spec/proposer.h"
#include "model/sequence_runner.h"

namespace nucleus {

// Throws Error naming the first difference (tokenizer model, vocabulary size, a token's text,
// BOS/EOS id) between the tokenizers of two model files; `draft_name` labels the message.
void check_same_vocabulary(const GgufFile& target, const GgufFile& draft, const std::string& draft_name);

class DraftModelProposer final : public Proposer {
 public:
  // `draft` must outlive the proposer. params: the request's sampling parameters (the draft's q
  // goes through the same chain as the target's p; the seed is taken from each DraftRequest).
  // n_ctx: the most positions a sequence reaches, drafts included.
  DraftModelProposer(Model& draft, const SamplingParams& params, int64_t n_ctx, int n_threads, std::string name);
  std::string name() const override { return name_; }
  void propose(const DraftRequest& request, DraftProposal& proposal) override;

  Model& model() { return runner_.model(); }

 private:
  SequenceRunner runner_;
  SamplerChain chain_;
  std::string name_;
  std::vector<int32_t> context_;  // the sequence plus the drafts so far, for the penalties
};

}  // namespace nucleus
