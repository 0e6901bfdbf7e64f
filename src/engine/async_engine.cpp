#include "engine/async_engine.h"

#include <chrono>
#include <iterator>

namespace nucleus {

void RequestStream::push(RequestOutput out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (out.finished) done_ = true;
    queue_.push_back(std::move(out));
  }
  ready_.notify_all();
}

bool RequestStream::next(RequestOutput& out) {
  bool timed_out = false;
  return next_for(out, -1, &timed_out);
}

bool RequestStream::next_for(RequestOutput& out, int64_t timeout_ms, bool* timed_out) {
  std::unique_lock<std::mutex> lock(mutex_);
  *timed_out = false;
  auto has_output = [&] { return !queue_.empty(); };
  if (timeout_ms < 0) {
    ready_.wait(lock, [&] { return has_output() || (done_ && queue_.empty()); });
  } else if (!ready_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return has_output() || done_; })) {
    *timed_out = true;
    return true;
  }
  if (queue_.empty()) return false;  // finished and drained
  out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

AsyncEngine::AsyncEngine(std::unique_ptr<LLMEngine> engine) : engine_(std::move(engine)) {
  stats_ = engine_->stats();
  thread_ = std::thread([this] { loop(); });
}

AsyncEngine::~AsyncEngine() {
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
  for (auto& [id, stream] : streams_) {  // tell remaining readers their request ended
    RequestOutput out;
    out.request_id = id;
    out.finished = true;
    out.aborted = true;
    stream->push(out);
  }
}

std::shared_ptr<RequestStream> AsyncEngine::submit(std::vector<int32_t> prompt, RequestOptions options) {
  engine_->validate_request(prompt, options);  // immutable facts only: no lock needed
  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    const int64_t id = next_id_++;
    stream = std::make_shared<RequestStream>(id);
    streams_[id] = stream;
    pending_.push_back({id, std::move(prompt), std::move(options)});
  }
  work_.notify_all();
  return stream;
}

void AsyncEngine::abort(int64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    aborts_.push_back(request_id);
  }
  work_.notify_all();
}

EngineStats AsyncEngine::stats() {
  std::lock_guard<std::mutex> lock(inbox_mutex_);
  return stats_;
}

void AsyncEngine::dispatch(std::vector<RequestOutput>& outputs) {
  std::lock_guard<std::mutex> lock(inbox_mutex_);
  for (RequestOutput& out : outputs) {
    auto it = streams_.find(out.request_id);
    if (it == streams_.end()) continue;
    std::shared_ptr<RequestStream> stream = it->second;
    if (out.finished) streams_.erase(it);
    stream->push(std::move(out));
  }
  stats_ = engine_->stats();
}

void AsyncEngine::loop() {
  while (true) {
    std::vector<Pending> pending;
    std::vector<int64_t> aborts;
    {
      std::unique_lock<std::mutex> lock(inbox_mutex_);
      work_.wait(lock, [&] { return stopping_ || !pending_.empty() || !aborts_.empty() || engine_->has_unfinished(); });
      if (stopping_) return;
      pending.swap(pending_);
      aborts.swap(aborts_);
    }
    std::vector<RequestOutput> refused;
    for (Pending& p : pending) {
      try {
        engine_->add_request(std::move(p.prompt), std::move(p.options), p.id);
      } catch (const std::exception& e) {
        RequestOutput out;
        out.request_id = p.id;
        out.finished = true;
        out.error = e.what();
        refused.push_back(std::move(out));
      }
    }
    for (int64_t id : aborts) engine_->abort(id);
    std::vector<RequestOutput> outputs = engine_->step();  // also returns the aborted requests' final outputs
    outputs.insert(outputs.end(), std::make_move_iterator(refused.begin()), std::make_move_iterator(refused.end()));
    dispatch(outputs);
  }
}

}  // namespace nucleus
