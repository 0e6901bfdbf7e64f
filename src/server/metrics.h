// Prometheus text exposition (format 0.0.4) of the server: engine gauges and counters read from
// EngineStats at scrape time, plus the server's own latency histograms and request counters.
// Thread-safe: handlers observe from many threads, /metrics renders from another.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/llm_engine.h"

namespace nucleus::server {

// A cumulative histogram: counts[i] = observations ≤ bounds[i] (le), plus +Inf, sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // "# TYPE" line and the _bucket / _sum / _count series.
  void render(std::string& out, const std::string& name, const std::string& help) const;
  int64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // [bounds.size()] non-cumulative; made cumulative when rendered
  int64_t count_ = 0;
  double sum_ = 0.0;
};

class ServerMetrics {
 public:
  ServerMetrics();

  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  // One finished sequence: its end-to-end latency and how it ended ("stop", "length", "abort", "error").
  void observe_sequence_finished(double e2e_seconds, const std::string& finished_reason);
  void count_http_response(int status);
  // Structured output: compiling a request's constraint (cache misses only) and each token mask.
  void observe_structured_compile(double seconds);
  void observe_structured_mask(const std::vector<double>& seconds);

  // The whole exposition; `stats` is null before the model is loaded. With stats, vLLM's series
  // (vllm_metrics.h) follow nucleus's own, labelled with `model_name`.
  std::string render(const EngineStats* stats, const std::string& model_name = "") const;

 private:
  mutable std::mutex mutex_;
  Histogram time_to_first_token_;
  Histogram inter_token_latency_;
  Histogram e2e_latency_;
  Histogram structured_compile_;
  Histogram structured_mask_;
  std::map<std::string, int64_t> sequences_finished_;  // by reason
  std::map<int, int64_t> http_responses_;              // by status
};

}  // namespace nucleus::server
