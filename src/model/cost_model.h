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

}  // namespace nucleus
