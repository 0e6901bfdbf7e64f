// nucleus bench serve --workload sessions: multi-turn conversations whose prompts extend the previous
// turn, the workload prefix-affine routing is for. Each of --sessions sessions opens with its own
// passage (--prefix-words words, so sessions differ in their first bytes) and then sends --turns
// requests back to back, each prompt being the previous one plus --turn-words new words. Sessions
// run concurrently. With --session-header every request carries "x-session-id: s<N>".
//
// Reports TTFT, throughput and, per replica (the x-nucleus-replica header of each answer), the
// requests it took and its prefix-cache hit rate over the run, read from each --replica-url's
// /metrics (vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, before and after).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nucleus::cli {

struct SessionWorkload {
  std::string base_url, api_key, model;
  int64_t sessions = 16, turns = 4, prefix_words = 80, turn_words = 12, output_len = 16;
  bool session_header = false;
  std::vector<std::string> replica_urls;  // each replica's own URL, for its /metrics
  uint64_t seed = 0;
};

// Runs the workload; returns the report (see the header comment) as JSON. Failed requests are
// counted and their first errors kept in the report.
nlohmann::json run_session_workload(const SessionWorkload& w);
// The report as a table on stdout.
void print_session_report(const nlohmann::json& report);

}  // namespace nucleus::cli
