// Self-speculation: the target's own first K layers, followed by its final norm and output head,
// as the draft model — no second file, the same tokenizer. The prefix model shares the target's
// weights (Model::layer_prefix: nothing is copied); its KV cache holds K layers.
#pragma once
#include <memory>

#include "model/model.h"
#include "speculative/draft_model_proposer.h"

namespace nucleus {

// A model made of target's token embedding, layers [0, n_layers), output norm and output head.
// Throws Error unless 1 ≤ n_layers ≤ target's layer count.
std::unique_ptr<Model> load_layer_prefix_model(const Model& target, int64_t n_layers);

class SelfSpeculationProposer final : public Proposer {
 public:
  SelfSpeculationProposer(const Model& target, int64_t n_layers, const SamplingParams& params, int n_threads);
  std::string name() const override { return draft_->name(); }
  void propose(const DraftRequest& request, DraftProposal& proposal) override { draft_->propose(request, proposal); }

 private:
  std::unique_ptr<Model> prefix_;  // declared first: the draft proposer refers to it
  std::unique_ptr<DraftModelProposer> draft_;
};

}  // namespace nucleus
