// What one forward step costs in arithmetic and memory traffic: the raw material for roofline
// plots. Counts follow the forward pass in forward.cpp.
#pragma once
#include <cstdint>

#include "model/forward_batch.h"
#include "model/model.h"

namespace nucleus {

struct StepCost {
  int64_t n_tokens = 0;
  double flops = 0.0;         // 2 per multiply-add: matmuls + attention
  double weight_bytes = 0.0;  // every matrix once (decode reads all weights per step)
  double kv_bytes = 0.0;      // keys and values read by attention + written for the new tokens
  double intensity() const { return flops / (weight_bytes + kv_bytes); }  // FLOP per byte
};

StepCost estimate_step_cost(const Model& model, const ForwardBatch& batch);
// One sequence with n_past tokens cached feeding n_tokens more, logits for the last one only: a
// prefill (n_past = 0, n_tokens = prompt) or a decode step (n_tokens = 1).
StepCost estimate_sequence_step_cost(const Model& model, int64_t n_past, int64_t n_tokens);

}  // namespace nucleus
