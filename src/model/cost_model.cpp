#include "model/cost_model.h"

namespace nucleus {

StepCost estimate_step_cost(const Model& model, const ForwardBatch& batch) {
  const HParams& hp = model.hparams();
  StepCost cost;
  cost.n_tokens = batch.n_tokens();
  const double n = static_cast<double>(batch.n_tokens());
  const double layer_params = static_cast<double>(hp.n_embd * (2 * hp.n_embd + 2 * hp.kv_dim()) + 3 * hp.n_embd * hp.n_ff);
  cost.flops = 2.0 * n * layer_params * static_cast<double>(hp.n_layer) +
               2.0 * static_cast<double>(batch.n_outputs()) * static_cast<double>(hp.n_embd * hp.n_vocab);
  double attended = 0.0;  // Σ over tokens of positions attended
  for (int32_t p : batch.positions) attended += p + 1;
  // Per layer and head: q·k and a·v over the attended positions.
  cost.flops += 4.0 * attended * static_cast<double>(hp.head_dim * hp.n_head * hp.n_layer);
  cost.weight_bytes = static_cast<double>(model.weight_bytes());
  // K and V rows (f32) read once per KV head group per token, written once per new token.
  cost.kv_bytes = (attended + n) * 2.0 * static_cast<double>(hp.kv_dim() * hp.n_layer) * sizeof(float);
  return cost;
}

StepCost estimate_sequence_step_cost(const Model& model, int64_t n_past, int64_t n_tokens) {
  ForwardBatch batch;
  for (int64_t i = 0; i < n_tokens; ++i)
    batch.add(0, static_cast<int32_t>(n_past + i), 0, i + 1 == n_tokens);
  return estimate_step_cost(model, batch);
}

}  // namespace nucleus
