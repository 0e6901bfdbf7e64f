#include "model/cost_model.h"

#include <algorithm>

namespace nucleus {

StepCost estimate_step_cost(const Model& model, const ForwardBatch& batch) {
  const HParams& hp = model.hparams();
  StepCost cost;
  cost.n_tokens = batch.n_tokens();
  const double n = static_cast<double>(batch.n_tokens());
  const double E = static_cast<double>(hp.n_embd);
  double layer_params = 0.0;  // multiply-adds per token in the layers' matmuls (MoE: the experts used)
  double attention_flops = 0.0, kv_bytes = 0.0;
  for (size_t il = 0; il < hp.layers.size(); ++il) {
    const LayerSpec& l = hp.layers[il];
    const double ffn = 3.0 * E * static_cast<double>(l.n_ff) * static_cast<double>(l.moe() ? l.n_expert_used : 1) +
                       (l.moe() ? E * static_cast<double>(l.n_expert) : 0.0);
    if (l.delta_net) {  // projections in and out, then the delta rule over the S × S states (flat in context)
      const DeltaNetSpec& d = hp.delta_net;
      layer_params += E * static_cast<double>(d.conv_dim() + 2 * d.value_dim() + 2 * d.n_v_heads) + ffn;
      attention_flops += n * 8.0 * static_cast<double>(d.ssm_state_floats());
      continue;
    }
    layer_params += E * static_cast<double>(2 * l.q_dim() + 2 * l.kv_dim()) + ffn;
    double attended = 0.0;  // Σ over tokens of positions attended (a sliding window caps it)
    for (int32_t p : batch.positions)
      attended += l.sliding_window > 0 ? std::min<double>(p + 1, static_cast<double>(l.sliding_window)) : p + 1;
    // Per head: q·k and a·v over the attended positions.
    attention_flops += 4.0 * attended * static_cast<double>(l.head_dim * l.n_head);
    // K and V rows (f32) read once per KV head group per token, written once per new token.
    kv_bytes += (attended + (l.stores_kv(static_cast<int64_t>(il)) ? n : 0.0)) * 2.0 * static_cast<double>(l.kv_dim()) * sizeof(float);
  }
  cost.flops = 2.0 * n * layer_params + attention_flops +
               2.0 * static_cast<double>(batch.n_outputs()) * static_cast<double>(hp.n_embd * hp.n_vocab);
  cost.weight_bytes = static_cast<double>(model.weight_bytes());
  cost.kv_bytes = kv_bytes;
  return cost;
}

StepCost estimate_sequence_step_cost(const Model& model, int64_t n_past, int64_t n_tokens) {
  ForwardBatch batch;
  for (int64_t i = 0; i < n_tokens; ++i)
    batch.add(0, static_cast<int32_t>(n_past + i), 0, i + 1 == n_tokens);
  return estimate_step_cost(model, batch);
}

}  // namespace nucleus
