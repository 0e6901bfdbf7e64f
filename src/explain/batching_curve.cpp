#include "explain/batching_curve.h"

#include <exception>
#include <memory>
#include <string>

namespace nucleus::explain {

const char* batching_curve_state_name(BatchingCurveState state) {
  switch (state) {
    case BatchingCurveState::idle: return "idle";
    case BatchingCurveState::running: return "running";
    case BatchingCurveState::done: return "done";
    case BatchingCurveState::failed: return "failed";
  }
  return "?";
}

BatchingCurve::~BatchingCurve() {
  cancel_ = true;
  if (worker_.joinable()) worker_.join();
}

BatchingCurveStatus BatchingCurve::start(const BatchingCurveRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (status_.request == request && status_.state == BatchingCurveState::running) return status_;
  if (status_.request == request && status_.state == BatchingCurveState::done) {
    BatchingCurveStatus cached = status_;
    cached.cached = true;
    return cached;
  }
  // A run still marked running may have released the slot already but not yet taken mutex_ to
  // finish; it counts as busy (joining it here, under mutex_, would deadlock).
  if (status_.state == BatchingCurveState::running)
    throw MeasurementBusy("another batching curve is being measured (" + std::to_string(status_.points.size()) + " of " +
                          std::to_string(status_.request.batch_sizes.size()) + " batch sizes done); retry when it finishes");
  MeasurementSlot::Hold hold = slot_.acquire();  // throws while anything else is measured
  if (worker_.joinable()) worker_.join();  // the previous run has finished
  status_ = BatchingCurveStatus{};
  status_.state = BatchingCurveState::running;
  status_.request = request;
  worker_ = std::thread([this, request, h = std::move(hold)]() mutable { run(request, std::move(h)); });
  return status_;
}

BatchingCurveStatus BatchingCurve::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void BatchingCurve::run(BatchingCurveRequest request, MeasurementSlot::Hold hold) {
  try {
    std::unique_ptr<Model> model = weights_.share_weights();  // own scratch: this thread runs beside the others
    BatchBenchmarkConfig config;
    config.n_prompt = request.n_prompt;
    config.n_gen = request.n_gen;
    config.n_threads = n_threads_;
    std::vector<BatchPoint> points;
    for (int64_t batch : request.batch_sizes) {
      if (cancel_) return;
      points.push_back(measure_batch(*model, config, batch));
      std::lock_guard<std::mutex> lock(mutex_);
      status_.points = points;
    }
    hold.release();  // before `done` is visible: a client seeing it may start the next measurement
    std::lock_guard<std::mutex> lock(mutex_);
    status_.knee = find_knee(points);
    status_.state = BatchingCurveState::done;
  } catch (const std::exception& e) {
    hold.release();
    std::lock_guard<std::mutex> lock(mutex_);
    status_.error = e.what();
    status_.state = BatchingCurveState::failed;
  }
}

}  // namespace nucleus::explain
