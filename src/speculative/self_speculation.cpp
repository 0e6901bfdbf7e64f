#include "speculative/self_speculation.h"

#include "core/error.h"

namespace nucleus {

std::unique_ptr<Model> load_layer_prefix_model(const Model& target, int64_t n_layers) {
  const HParams& hp = target.hparams();
  if (n_layers < 1 || n_layers > hp.n_layer)
    throw Error("self-speculation: K must be in 1.." + std::to_string(hp.n_layer) + " (the target's layers), got " +
                std::to_string(n_layers));
  return target.layer_prefix(n_layers);  // the target's own weights: nothing is copied
}

std::shared_ptr<DraftBatch> self_speculation_batch(const Model& target, int64_t n_layers, int n_threads) {
  return std::make_shared<DraftBatch>(load_layer_prefix_model(target, n_layers), n_threads);
}

std::string self_speculation_name(int64_t n_layers) { return "self:" + std::to_string(n_layers); }

std::unique_ptr<DraftModelProposer> make_self_speculation_proposer(const Model& target, int64_t n_layers,
                                                                   const SamplingParams& params, int n_threads) {
  return std::make_unique<DraftModelProposer>(self_speculation_batch(target, n_layers, n_threads), params,
                                              self_speculation_name(n_layers));
}

}  // namespace nucleus
