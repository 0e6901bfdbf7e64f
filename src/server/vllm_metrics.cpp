#include "server/vllm_metrics.h"

#include "server/prometheus_text.h"

namespace nucleus::server {

namespace {

// Label values are escaped as the text format asks: backslash, double quote and newline.
std::string label_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void series(std::string& out, const std::string& name, const char* type, const std::string& help,
            const std::string& labels, double value) {
  prometheus_header(out, name, type, help);
  out += name + "{" + labels + "} " + prometheus_number(value) + "\n";
}

}  // namespace

void render_vllm_metrics(std::string& out, const EngineStats& stats, const std::string& model_name) {
  const std::string model = "model_name=\"" + label_value(model_name) + "\"";
  series(out, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", model,
         static_cast<double>(stats.num_running));
  series(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", model,
         static_cast<double>(stats.num_waiting));
  for (const char* name : {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"})
    series(out, name, "gauge", "KV-cache usage. 1 means 100 percent usage.", model, stats.kv_usage());
  for (const char* prefix : {"vllm:prefix_cache", "vllm:gpu_prefix_cache"}) {
    series(out, std::string(prefix) + "_queries_total", "counter",
           "Prefix cache queries, in terms of number of queried tokens.", model,
           static_cast<double>(stats.prefix_query_tokens));
    series(out, std::string(prefix) + "_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
           model, static_cast<double>(stats.prefix_cached_tokens));
  }
  series(out, "vllm:cache_config_info", "gauge", "Information of the KV cache configuration.",
         "block_size=\"" + std::to_string(stats.kv_block_size) + "\",num_gpu_blocks=\"" +
             std::to_string(stats.kv_blocks_total) + "\"",
         1.0);
}

}  // namespace nucleus::server
