// Panel 4's data: the batch benchmark (engine/batch_benchmark.h) run on demand in the background,
// with progress, and cached: asking again with the same settings returns the finished curve at
// once. It runs on its own copy of the model (loaded from the same file, so the weights' pages are
// shared), so neither the OpenAI engine nor the other explainer calls wait for it.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/batch_benchmark.h"
#include "engine/model_source.h"

namespace nucleus::explain {

struct BatchingCurveRequest {
  std::vector<int64_t> batch_sizes;  // ascending, distinct
  int64_t n_prompt = 32;
  int64_t n_gen = 32;
  bool operator==(const BatchingCurveRequest&) const = default;
};

enum class BatchingCurveState { idle, running, done, failed };
const char* batching_curve_state_name(BatchingCurveState state);

struct BatchingCurveStatus {
  BatchingCurveState state = BatchingCurveState::idle;
  BatchingCurveRequest request;      // what is running or was run
  std::vector<BatchPoint> points;    // the batch sizes finished so far
  int64_t knee = 0;                  // when done
  std::string error;                 // when failed
  bool cached = false;               // start() found this curve already measured
};

class BatchingCurve {
 public:
  // weights_from: when set, the runs use a Model sharing its weights (Model::share_weights)
  // instead of loading the source again; it must outlive this.
  BatchingCurve(ModelSource source, int n_threads, const Model* weights_from = nullptr)
      : source_(std::move(source)), n_threads_(n_threads), weights_from_(weights_from) {}
  ~BatchingCurve();  // cancels a run between batch sizes and waits for it
  BatchingCurve(const BatchingCurve&) = delete;
  BatchingCurve& operator=(const BatchingCurve&) = delete;

  // Starts a run unless the same request is running or done (then reports that, cached = true when
  // done). A different request while one runs is refused: returns false and the running status.
  bool start(const BatchingCurveRequest& request, BatchingCurveStatus& status);
  BatchingCurveStatus status() const;

 private:
  void run(BatchingCurveRequest request);

  ModelSource source_;
  int n_threads_;
  const Model* weights_from_;
  mutable std::mutex mutex_;  // guards status_
  BatchingCurveStatus status_;
  std::atomic<bool> cancel_{false};
  std::thread worker_;
};

}  // namespace nucleus::explain
