// The engine behind a loop thread, for concurrent users (the server, `nucleus generate`).
// submit() returns a stream of RequestOutputs; abort() cancels a request at once (its KV blocks
// return to the pool at the next step). Thread-safe.
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/llm_engine.h"

namespace nucleus {

class RequestStream {
 public:
  explicit RequestStream(int64_t id) : id_(id) {}
  int64_t id() const { return id_; }
  // Blocks until the next output; false once the final output has been read.
  bool next(RequestOutput& out);
  // As next(), waiting at most `timeout_ms`; sets *timed_out when nothing came.
  bool next_for(RequestOutput& out, int64_t timeout_ms, bool* timed_out);

  void push(RequestOutput out);  // called by the loop thread

 private:
  int64_t id_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestOutput> queue_;
  bool done_ = false;  // the final output was queued
};

class AsyncEngine {
 public:
  explicit AsyncEngine(std::unique_ptr<LLMEngine> engine);
  ~AsyncEngine();  // stops the loop; unfinished requests end with aborted outputs
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // Validates (throws Error like LLMEngine::add_request) and queues a request; the loop thread
  // admits it before its next step. Never waits for a running step.
  std::shared_ptr<RequestStream> submit(std::vector<int32_t> prompt, RequestOptions options);
  // Cancels at once from the caller's view; the loop frees its blocks before its next step.
  void abort(int64_t request_id);
  // A snapshot taken after the latest step.
  EngineStats stats();
  // Read-only facts fixed at construction (safe from any thread).
  const LLMEngine& engine() const { return *engine_; }

 private:
  struct Pending {
    int64_t id;
    std::vector<int32_t> prompt;
    RequestOptions options;
  };
  void loop();
  void dispatch(std::vector<RequestOutput>& outputs);

  std::unique_ptr<LLMEngine> engine_;  // touched only by the loop thread after construction
  std::mutex inbox_mutex_;             // guards pending_, aborts_, streams_, stats_, stopping_
  std::condition_variable work_;
  std::vector<Pending> pending_;
  std::vector<int64_t> aborts_;
  std::unordered_map<int64_t, std::shared_ptr<RequestStream>> streams_;
  EngineStats stats_;
  int64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace nucleus
