#include "engine/scheduler.h"

#include <algorithm>

namespace nucleus {

void Scheduler::add(Request* request) {
  request->status = RequestStatus::waiting;
  waiting_.push_back(request);
}

void Scheduler::preempt(Request* request) {
  kv_.free(*request);
  request->num_computed_tokens = 0;
  request->draft.clear();
  request->status = RequestStatus::waiting;
  ++request->num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), request));
  // Back to the front, ahead of later arrivals, so it is readmitted first.
  auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](Request* w) { return w->arrival > request->arrival; });
  waiting_.insert(it, request);
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int64_t budget = config_.max_num_batched_tokens;

  // 1. Running requests, oldest first (running_ is kept in arrival order).
  const std::vector<Request*> snapshot = running_;
  for (Request* request : snapshot) {
    if (budget <= 0) break;
    if (request->status != RequestStatus::running) continue;  // preempted earlier in this step
    const int64_t num_new = std::min(request->num_tokens_to_compute() - request->num_computed_tokens, budget);
    if (num_new <= 0) continue;
    bool scheduled = true;
    while (!kv_.allocate_slots(*request, num_new)) {
      // Out of blocks: preempt the latest-arrived running request (possibly this one) — unless this
      // step already handed it tokens; then this request waits for the next step instead.
      Request* victim = running_.back();
      const bool victim_scheduled =
          std::any_of(out.scheduled.begin(), out.scheduled.end(), [&](const ScheduledRequest& s) { return s.request == victim; });
      if (victim_scheduled) {
        scheduled = false;
        break;
      }
      preempt(victim);
      ++out.num_preempted;
      if (victim == request) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) continue;
    out.scheduled.push_back({request, num_new});
    budget -= num_new;
  }

  // 2. Waiting requests in order, while there is budget, room and (after a preemption) no shortage.
  while (!waiting_.empty() && budget > 0 && out.num_preempted == 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    Request* request = waiting_.front();
    const int64_t cached = kv_.acquire_cached_prefix(*request);
    if (prefix_in_flight(*request, cached)) {
      kv_.free(*request);  // admitted next time, when the block is a cache hit
      break;
    }
    request->num_computed_tokens = cached;
    const int64_t num_new = std::min(request->num_tokens_to_compute() - cached, budget);
    if (!kv_.allocate_slots(*request, num_new)) {
      kv_.free(*request);  // give the prefix hits back; wait for blocks (FCFS: nobody jumps the queue)
      request->num_computed_tokens = 0;
      break;
    }
    waiting_.pop_front();
    request->status = RequestStatus::running;
    running_.insert(std::upper_bound(running_.begin(), running_.end(), request,
                                     [](Request* a, Request* b) { return a->arrival < b->arrival; }),
                    request);
    out.scheduled.push_back({request, num_new});
    out.num_prefix_cached_tokens += cached;
    out.num_prefix_query_tokens += request->num_tokens();
    budget -= num_new;
  }
  out.num_batched_tokens = config_.max_num_batched_tokens - budget;
  return out;
}

bool Scheduler::prefix_in_flight(const Request& request, int64_t cached) const {
  if (!kv_.prefix_caching()) return false;
  const int64_t end = cached + kv_.block_size();  // the next block of the prompt
  if (end > request.num_tokens() - 1) return false;  // not one a cache hit could cover
  const auto prefix_end = request.tokens.begin() + end;
  return std::any_of(running_.begin(), running_.end(), [&](const Request* r) {
    return r->status == RequestStatus::running && r->num_computed_tokens < end && r->num_tokens() >= end &&
           std::equal(request.tokens.begin(), prefix_end, r->tokens.begin());
  });
}

void Scheduler::update_after_step(const SchedulerOutput& output) {
  for (const ScheduledRequest& s : output.scheduled) {
    s.request->num_computed_tokens += s.num_tokens;
    kv_.cache_full_blocks(*s.request);
  }
}

void Scheduler::remove(Request* request) {
  kv_.free(*request);
  if (auto it = std::find(running_.begin(), running_.end(), request); it != running_.end()) running_.erase(it);
  if (auto it = std::find(waiting_.begin(), waiting_.end(), request); it != waiting_.end()) waiting_.erase(it);
  request->status = RequestStatus::finished;
}

}  // namespace nucleus
