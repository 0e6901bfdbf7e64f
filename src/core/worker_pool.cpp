#include "core/worker_pool.h"

#include <chrono>
#include <exception>
#include <mutex>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace nucleus {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// How long a worker spins for the next loop before sleeping: longer than the gaps inside a step.
constexpr std::chrono::microseconds kSpin{50};

}  // namespace

WorkerPool::WorkerPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads), remaining_(static_cast<size_t>(n_threads_)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { work(t); });
}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void WorkerPool::run_stealing(const Loop& loop, int thread) {
  constexpr uint64_t kLow = 0xffffffffu;
  // Its own share from the front.
  std::atomic<uint64_t>& own = remaining_[static_cast<size_t>(thread)].range;
  for (uint64_t range = own.load(std::memory_order_relaxed);;) {
    const uint64_t next = range & kLow, end = range >> 32;
    if (next >= end) break;
    if (!own.compare_exchange_weak(range, (next + 1) | (end << 32), std::memory_order_relaxed)) continue;
    loop.call(loop.context, static_cast<int64_t>(next), thread);
    range = own.load(std::memory_order_relaxed);
  }
  // Then the others' last tasks, one at a time. (The tasks' data was published with the loop; a
  // task index is claimed exactly once, by whichever compare-and-swap moved past it.)
  for (int k = 1; k < n_threads_; ++k) {
    std::atomic<uint64_t>& other = remaining_[static_cast<size_t>((thread + k) % n_threads_)].range;
    for (uint64_t range = other.load(std::memory_order_relaxed);;) {
      const uint64_t next = range & kLow, end = range >> 32;
      if (next >= end) break;
      if (!other.compare_exchange_weak(range, next | ((end - 1) << 32), std::memory_order_relaxed)) continue;
      loop.call(loop.context, static_cast<int64_t>(end - 1), thread);
      range = other.load(std::memory_order_relaxed);
    }
  }
}

void WorkerPool::run_share(const Loop& loop, int thread) {
  if (loop.schedule == Schedule::Stealing) return run_stealing(loop, thread);
  if (loop.schedule == Schedule::Dynamic) {
    for (int64_t task; (task = next_task_.fetch_add(1, std::memory_order_relaxed)) < loop.n_tasks;)
      loop.call(loop.context, task, thread);
    return;
  }
  const int64_t begin = loop.n_tasks * thread / n_threads_, end = loop.n_tasks * (thread + 1) / n_threads_;
  for (int64_t task = begin; task < end; ++task) loop.call(loop.context, task, thread);
}

void WorkerPool::run_loop(const Loop& loop) {
  if (workers_.empty() || loop.n_tasks <= 0) {
    for (int64_t task = 0; task < loop.n_tasks; ++task) loop.call(loop.context, task, 0);
    return;
  }
  loop_ = loop;
  // Stealing packs task indices into 32 bits; a loop of more tasks (none so far) goes dynamic.
  if (loop_.schedule == Schedule::Stealing && loop_.n_tasks > 0xffffffffLL) loop_.schedule = Schedule::Dynamic;
  if (loop_.schedule == Schedule::Stealing)
    for (int t = 0; t < n_threads_; ++t) {
      const uint64_t begin = static_cast<uint64_t>(loop_.n_tasks * t / n_threads_);
      const uint64_t end = static_cast<uint64_t>(loop_.n_tasks * (t + 1) / n_threads_);
      remaining_[static_cast<size_t>(t)].range.store(begin | (end << 32), std::memory_order_relaxed);
    }
  next_task_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes loop_, remaining_, next_task_, finished_
  generation_.notify_all();
  std::exception_ptr error;
  try {
    run_share(loop_, 0);
  } catch (...) {
    error = std::current_exception();
  }
  // The workers still use the loop's body (the caller's): wait for them whatever happened here.
  const int n_workers = static_cast<int>(workers_.size());
  while (finished_.load(std::memory_order_acquire) < n_workers) cpu_relax();
  if (!error) error = std::exchange(worker_error_, nullptr);
  worker_error_ = nullptr;
  if (error) std::rethrow_exception(error);
}

void WorkerPool::work(int thread) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) {
      const auto deadline = std::chrono::steady_clock::now() + kSpin;
      int spins = 0;
      while ((now = generation_.load(std::memory_order_acquire)) == seen) {
        cpu_relax();
        if (++spins % 64 == 0 && std::chrono::steady_clock::now() > deadline) {
          generation_.wait(seen, std::memory_order_acquire);
          spins = 0;
        }
      }
    }
    seen = now;
    if (stop_.load(std::memory_order_relaxed)) return;
    try {
      run_share(loop_, thread);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex_);
      if (!worker_error_) worker_error_ = std::current_exception();
    }
    finished_.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace nucleus
