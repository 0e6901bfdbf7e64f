// Panel 4's data: the batch benchmark (engine/batch_benchmark.h) run on demand in the background,
// with progress, and cached: asking again with the same settings returns the finished curve at
// once. It runs on its own Model sharing the speed model's weights (own scratch), so neither the
// OpenAI engine nor the interactive panels wait for it; while it runs it holds the speed model's
// measurement slot, so other timed measurements are refused instead of disturbing it.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/batch_benchmark.h"
#include "explain/measurement_slot.h"
#include "model/model.h"

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
  // `weights` (the speed model) and `slot` must outlive this.
  BatchingCurve(const Model& weights, int n_threads, MeasurementSlot& slot) : weights_(weights), n_threads_(n_threads), slot_(slot) {}
  ~BatchingCurve();  // cancels a run between batch sizes and waits for it
  BatchingCurve(const BatchingCurve&) = delete;
  BatchingCurve& operator=(const BatchingCurve&) = delete;

  // Reports the same request running or done (cached = true when done); otherwise takes the
  // measurement slot and starts a run. Throws MeasurementBusy while any measurement (another curve
  // included) holds the slot.
  BatchingCurveStatus start(const BatchingCurveRequest& request);
  BatchingCurveStatus status() const;

 private:
  void run(BatchingCurveRequest request, MeasurementSlot::Hold hold);

  const Model& weights_;
  int n_threads_;
  MeasurementSlot& slot_;
  mutable std::mutex mutex_;  // guards status_
  BatchingCurveStatus status_;
  std::atomic<bool> cancel_{false};
  std::thread worker_;
};

}  // namespace nucleus::explain
