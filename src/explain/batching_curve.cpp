#include "explain/batching_curve.h"

#include <exception>

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

bool BatchingCurve::start(const BatchingCurveRequest& request, BatchingCurveStatus& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (status_.state == BatchingCurveState::running) {
    status = status_;
    return status_.request == request;
  }
  if (status_.state == BatchingCurveState::done && status_.request == request) {
    status = status_;
    status.cached = true;
    return true;
  }
  if (worker_.joinable()) worker_.join();  // the previous run has finished (state is not running)
  status_ = BatchingCurveStatus{};
  status_.state = BatchingCurveState::running;
  status_.request = request;
  status = status_;
  worker_ = std::thread([this, request] { run(request); });
  return true;
}

BatchingCurveStatus BatchingCurve::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void BatchingCurve::run(BatchingCurveRequest request) {
  try {
    // The served model's weights, shared (own scratch: this thread runs beside the engine's).
    std::unique_ptr<Model> model = weights_from_ ? weights_from_->share_weights() : load_model(source_).model;
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
    std::lock_guard<std::mutex> lock(mutex_);
    status_.knee = find_knee(points);
    status_.state = BatchingCurveState::done;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.error = e.what();
    status_.state = BatchingCurveState::failed;
  }
}

}  // namespace nucleus::explain
