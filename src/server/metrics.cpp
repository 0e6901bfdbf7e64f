#include "server/metrics.h"

#include <cstdio>

#include "server/prometheus_text.h"
#include "server/vllm_metrics.h"

namespace nucleus::server {

namespace {

void gauge(std::string& out, const std::string& name, double value, const std::string& help) {
  prometheus_header(out, name, "gauge", help);
  out += name + " " + prometheus_number(value) + "\n";
}

void counter(std::string& out, const std::string& name, double value, const std::string& help) {
  prometheus_header(out, name, "counter", help);
  out += name + " " + prometheus_number(value) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}

void Histogram::observe(double value) {
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (value <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  ++count_;
  sum_ += value;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  prometheus_header(out, name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + prometheus_number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + prometheus_number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

ServerMetrics::ServerMetrics()
    : time_to_first_token_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0}),
      inter_token_latency_({0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0, 2.5}),
      e2e_latency_({0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0}),
      structured_compile_({0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0}),
      structured_mask_({0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1}) {}

void ServerMetrics::observe_structured_compile(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  structured_compile_.observe(seconds);
}

void ServerMetrics::observe_structured_mask(const std::vector<double>& seconds) {
  if (seconds.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (double s : seconds) structured_mask_.observe(s);
}

void ServerMetrics::observe_time_to_first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  time_to_first_token_.observe(seconds);
}

void ServerMetrics::observe_inter_token_latency(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  inter_token_latency_.observe(seconds);
}

void ServerMetrics::observe_sequence_finished(double e2e_seconds, const std::string& finished_reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  e2e_latency_.observe(e2e_seconds);
  ++sequences_finished_[finished_reason];
}

void ServerMetrics::count_http_response(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++http_responses_[status];
}

std::string ServerMetrics::render(const EngineStats* stats, const std::string& model_name) const {
  std::string out;
  gauge(out, "nucleus_model_loaded", stats ? 1 : 0, "1 once the model is loaded and requests are served.");
  if (stats) {
    gauge(out, "nucleus_num_requests_running", static_cast<double>(stats->num_running), "Sequences in the running batch.");
    gauge(out, "nucleus_num_requests_waiting", static_cast<double>(stats->num_waiting), "Sequences waiting to be scheduled.");
    gauge(out, "nucleus_kv_cache_usage_perc", stats->kv_usage(), "Fraction of KV cache blocks in use (0..1).");
    gauge(out, "nucleus_kv_cache_blocks_used", static_cast<double>(stats->kv_blocks_used), "KV cache blocks held by requests.");
    gauge(out, "nucleus_kv_cache_blocks_total", static_cast<double>(stats->kv_blocks_total), "KV cache blocks in the pool.");
    gauge(out, "nucleus_prefix_caching_enabled", stats->prefix_caching ? 1 : 0,
          "1 when prompts reuse cached blocks; 0 when switched off (a hybrid model with recurrent layers: the server log says why).");
    gauge(out, "nucleus_prefix_cache_hit_rate", stats->prefix_hit_rate(), "Prefix cache block hits / queries since start.");
    counter(out, "nucleus_prefix_cache_hits_total", static_cast<double>(stats->block_pool.prefix_hits), "Prefix cache block hits.");
    counter(out, "nucleus_prefix_cache_queries_total", static_cast<double>(stats->block_pool.prefix_queries), "Prefix cache block lookups.");
    counter(out, "nucleus_num_preemptions_total", static_cast<double>(stats->preemptions), "Requests preempted (recomputed later).");
    counter(out, "nucleus_prompt_tokens_total", static_cast<double>(stats->prompt_tokens), "Prompt tokens admitted.");
    counter(out, "nucleus_generation_tokens_total", static_cast<double>(stats->generated_tokens), "Tokens generated.");
    counter(out, "nucleus_engine_steps_total", static_cast<double>(stats->steps), "Engine steps (forward passes).");
    // Speculative decoding (serve --draft / --spec), as vLLM's spec_decode counters.
    counter(out, "nucleus_spec_decode_num_drafts_total", static_cast<double>(stats->spec.num_passes),
            "Target passes that verified drafts.");
    counter(out, "nucleus_spec_decode_num_draft_tokens_total", static_cast<double>(stats->spec.num_proposed),
            "Draft tokens verified.");
    counter(out, "nucleus_spec_decode_num_accepted_tokens_total", static_cast<double>(stats->spec.num_accepted),
            "Draft tokens accepted.");
    render_vllm_metrics(out, *stats, model_name);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  time_to_first_token_.render(out, "nucleus_time_to_first_token_seconds", "Time from submission to the first generated token.");
  inter_token_latency_.render(out, "nucleus_inter_token_latency_seconds", "Time between consecutive outputs of a sequence.");
  e2e_latency_.render(out, "nucleus_e2e_request_latency_seconds", "Time from submission to the end of a sequence.");
  structured_compile_.render(out, "nucleus_structured_compile_seconds",
                             "Time to compile a structured-output constraint (schema, grammar, regex, choice); cache hits not counted.");
  structured_mask_.render(out, "nucleus_structured_mask_seconds",
                          "Time to compute the allowed-token masks of one constrained sequence in one step.");
  prometheus_header(out, "nucleus_request_success_total", "counter", "Finished sequences by how they ended.");
  for (const char* reason : {"stop", "length", "abort", "error"}) {
    auto it = sequences_finished_.find(reason);
    out += std::string("nucleus_request_success_total{finished_reason=\"") + reason + "\"} " +
           std::to_string(it == sequences_finished_.end() ? 0 : it->second) + "\n";
  }
  prometheus_header(out, "nucleus_http_responses_total", "counter", "HTTP responses by status code.");
  for (const auto& [status, count] : http_responses_)
    out += "nucleus_http_responses_total{code=\"" + std::to_string(status) + "\"} " + std::to_string(count) + "\n";
  return out;
}

}  // namespace nucleus::server
