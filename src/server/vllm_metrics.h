// The metrics that Kubernetes inference gateways and vLLM-aware routers read (the Gateway API
// Inference Extension's model-server protocol, proposal 003; llm-d's and vLLM production-stack's
// scorers): vLLM's names and meanings, labelled model_name as vLLM labels them, rendered beside
// nucleus's own series on /metrics. Every value comes from EngineStats at scrape time.
//
//   vllm:num_requests_running / _waiting     gauges, sequences (as vLLM counts requests' sequences)
//   vllm:kv_cache_usage_perc                 gauge 0..1, KV blocks in use / blocks in the pool
//   vllm:gpu_cache_usage_perc                the same, vLLM's older name
//   vllm:prefix_cache_queries_total          counter, tokens of admitted requests looked up
//   vllm:prefix_cache_hits_total             counter, of those the tokens found in the prefix cache
//   vllm:gpu_prefix_cache_queries_total / _hits_total   the same, older names
//   vllm:cache_config_info{block_size, num_gpu_blocks}  gauge 1 (an "info" metric)
#pragma once
#include <string>

#include "engine/llm_engine.h"

namespace nucleus::server {

void render_vllm_metrics(std::string& out, const EngineStats& stats, const std::string& model_name);

}  // namespace nucleus::server
