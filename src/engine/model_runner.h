// Turns a SchedulerOutput into one ForwardBatch, runs the model over the paged KV cache, and
// returns the logits rows of the requests that reach their last known token (they sample next):
// one row, or — for a speculative request — one for the last token and one per draft.
#pragma once
#include <vector>

#include "engine/scheduler.h"
#include "model/model.h"

namespace nucleus {

class ModelRunner {
 public:
  ModelRunner(Model& model, KvCache& kv, int n_threads) : model_(model), kv_(kv), n_threads_(n_threads) {}

  struct SampledRows {
    Request* request = nullptr;
    int64_t first_row = 0;  // in logits
    int64_t n_rows = 0;     // 1 + the drafts computed this step
  };
  struct StepResult {
    std::vector<SampledRows> sampling;  // requests whose next token(s) are chosen from this step
    std::vector<float> logits;          // [Σ n_rows, n_vocab]
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
