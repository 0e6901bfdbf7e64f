// Self-speculation: the target's own first K layers, followed by its final norm and output head,
// as the draft model — no second file, the same tokenizer. The prefix model shares the target's
// weights (Model::layer_prefix: nothing is copied); its KV cache holds K layers.
//
// One way to build it: self_speculation_batch() makes the DraftBatch that owns the prefix model;
// every self-speculating proposer (the CLI's, the server's, the explainer's) is a
// DraftModelProposer on such a batch, named self_speculation_name(K).
#pragma once
#include <memory>
#include <string>

#include "model/model.h"
#include "speculative/draft_batch.h"
#include "speculative/draft_model_proposer.h"

namespace nucleus {

// A model made of target's token embedding, layers [0, n_layers), output norm and output head.
// Throws Error unless 1 ≤ n_layers ≤ target's layer count.
std::unique_ptr<Model> load_layer_prefix_model(const Model& target, int64_t n_layers);

// A DraftBatch drafting with (and owning) target's first n_layers layers; target must outlive it.
std::shared_ptr<DraftBatch> self_speculation_batch(const Model& target, int64_t n_layers, int n_threads);

std::string self_speculation_name(int64_t n_layers);  // "self:K"

// A proposer drafting alone with target's first n_layers layers (its own batch).
std::unique_ptr<DraftModelProposer> make_self_speculation_proposer(const Model& target, int64_t n_layers,
                                                                   const SamplingParams& params, int n_threads);

}  // namespace nucleus
