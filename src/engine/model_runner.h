// Turns a SchedulerOutput into one ForwardBatch, runs the model over the paged KV cache, and
// returns the logits rows of the requests that reach their last known token (they sample next).
#pragma once
#include <vector>

#include "engine/scheduler.h"
#include "model/model.h"

namespace nucleus {

class ModelRunner {
 public:
  ModelRunner(Model& model, KvCache& kv, int n_threads) : model_(model), kv_(kv), n_threads_(n_threads) {}

  struct StepResult {
    std::vector<Request*> sampling;  // requests whose next token is chosen from this step
    std::vector<float> logits;       // [sampling.size(), n_vocab]
  };
  // Computes every scheduled token; num_computed_tokens is not advanced here (the scheduler does).
  void run(const SchedulerOutput& plan, StepResult& result);

  Model& model() { return model_; }

 private:
  Model& model_;
  KvCache& kv_;
  int n_threads_;
  ForwardBatch batch_;
};

}  // namespace nucleus
