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
  // Recurrent models: gives back the request's state slot (finished or aborted).
  void release_state(const Request& request);
  // Puts the request's state slot back as it was before this step's pass (Request::state_before_pass).
  void restore_state(const Request& request);
  int64_t num_state_slots_used() const;

 private:
  // The request's recurrent state slot, taken on its first step; a slot whose owner is not running
  // (preempted: it restarts at position 0, so its state is worthless) is taken back when none is free.
  int32_t state_slot(Request& request);
  Model& model_;
  KvCache& kv_;
  int n_threads_;
  ForwardBatch batch_;
  std::vector<Request*> slot_owner_;  // [KvCacheShape::recurrent.num_slots] null: free
};

}  // namespace nucleus
