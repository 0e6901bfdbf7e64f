// The continuous-batching scheduler (vLLM v1's rule). There are no prefill and decode phases:
// each request has num_computed_tokens and a target (all its known tokens); each step hands out
// a token budget — running requests first (a decode costs 1), then waiting ones in arrival order,
// a prefill chunked to fit what is left. When KV blocks run out, the latest-arrived running
// request is preempted: its blocks are freed and it is recomputed later (FCFS, so it goes back to
// the front of the waiting queue and no request starves). A waiting request whose next full
// prompt block a running request is about to compute (n > 1 siblings, identical prompts arriving
// together) waits for it, and then takes it — and every block before it — from the prefix cache:
// the shared blocks are computed once and held by reference counts.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv_cache_manager.h"
#include "engine/request.h"

namespace nucleus {

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 512;  // token budget per step
  int64_t max_num_seqs = 64;             // running requests at most
};

struct ScheduledRequest {
  Request* request = nullptr;
  int64_t num_tokens = 0;  // tokens to compute this step, from request->num_computed_tokens on
};

// One step's plan: plain data handed to the model runner.
struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;
  int64_t num_batched_tokens = 0;
  int64_t num_preempted = 0;
  int64_t num_prefix_cached_tokens = 0;  // tokens newly admitted requests took from the cache
  int64_t num_prefix_query_tokens = 0;   // tokens of those requests looked up in the cache (their whole length)
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv) : config_(config), kv_(kv) {}

  void add(Request* request);
  SchedulerOutput schedule();
  // After the step ran: advance num_computed_tokens and register full blocks.
  void update_after_step(const SchedulerOutput& output);
  // Removes a finished or aborted request and frees its blocks.
  void remove(Request* request);

  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  bool empty() const { return waiting_.empty() && running_.empty(); }

 private:
  void preempt(Request* request);
  // True when a running request has the same tokens up to the end of the block after `cached`
  // and has not computed that block yet (only with prefix caching).
  bool prefix_in_flight(const Request& request, int64_t cached) const;

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // in admission order
};

}  // namespace nucleus
