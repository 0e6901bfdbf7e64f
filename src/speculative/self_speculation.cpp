#include "speculative/self_speculation.h"

#include <string>

#include "core/error.h"

namespace nucleus {

std::unique_ptr<Model> load_layer_prefix_model(const Model& target, int64_t n_layers) {
  const HParams& hp = target.hparams();
  if (n_layers < 1 || n_layers > hp.n_layer)
    throw Error("self-speculation: K must be in 1.." + std::to_string(hp.n_layer) + " (the target's layers), got " +
                std::to_string(n_layers));
  return target.layer_prefix(n_layers);  // the target's own weights: nothing is copied
}

SelfSpeculationProposer::SelfSpeculationProposer(const Model& target, int64_t n_layers, const SamplingParams& params,
                                                 int n_threads)
    : prefix_(load_layer_prefix_model(target, n_layers)),
      draft_(std::make_unique<DraftModelProposer>(*prefix_, params, n_threads, "self:" + std::to_string(n_layers))) {}

}  // namespace nucleus
