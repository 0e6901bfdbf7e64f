// A team of threads that runs one parallel loop at a time, for the forward pass's many short
// regions (a decode step enters ~111: the matmul passes and attention of every layer).
//
// Why not OpenMP there: entering and leaving a libgomp region for 2 threads cost 3.1–4.7 µs on the
// Zen 5 of docs/BENCHMARKS.md, OMP_WAIT_POLICY=active included, where one cache-line round trip
// between the cores costs 0.55 µs. Here a loop is published with one store that the waiting
// workers see, and its end is one counter the caller watches.
//
// Waiting workers spin for a short while (the gaps between a step's regions are the per-token
// operators, a few µs), then sleep on a futex (std::atomic::wait), so an idle pool — between
// requests, or while a speculative draft model runs on the same cores — costs no CPU.
// The calling thread is thread 0 and takes part in every loop.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace nucleus {

// How a loop's tasks are spread over the threads.
enum class Schedule {
  Static,    // thread i runs the contiguous share [n_tasks·i/n, n_tasks·(i+1)/n), in order
  Dynamic,   // one task at a time from a shared counter
  Stealing,  // Static, then a thread done with its share takes the others' last tasks, one at a time
};

class WorkerPool {
 public:
  explicit WorkerPool(int n_threads);  // n_threads − 1 workers beside the caller
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int n_threads() const { return n_threads_; }

  // body(task, thread) for every task in [0, n_tasks), thread in [0, n_threads()), spread as
  // `schedule` says. Returns when every task has run. One loop at a time, from one thread. A task
  // that throws ends its thread's part; the loop still waits for the other threads, then rethrows
  // the first exception (the caller's own first).
  //
  // Stealing is for loops whose threads stream their shares forward (a matmul's row groups): each
  // thread keeps its contiguous share as long as it is busy, so its reads stay one forward stream,
  // and a thread that a neighbour's job slowed down has its last tasks taken by the others
  // instead of keeping them waiting (on this shared 2-vCPU machine one vCPU at times ran a
  // compute-bound kernel at 48 G/s against the other's 80).
  template <class Body>
  void run(int64_t n_tasks, Schedule schedule, Body&& body) {
    using Callable = std::remove_reference_t<Body>;
    auto call = [](void* context, int64_t task, int thread) { (*static_cast<Callable*>(context))(task, thread); };
    run_loop(Loop{call, const_cast<void*>(static_cast<const void*>(&body)), n_tasks, schedule});
  }

 private:
  struct Loop {
    void (*call)(void*, int64_t, int) = nullptr;
    void* context = nullptr;
    int64_t n_tasks = 0;
    Schedule schedule = Schedule::Static;
  };
  // A thread's remaining tasks [next, end) under Stealing, as next | end << 32: its owner takes
  // `next` and others take `end − 1`, each by one compare-and-swap of the pair.
  struct alignas(64) Remaining {
    std::atomic<uint64_t> range{0};
  };
  void run_loop(const Loop& loop);
  void run_share(const Loop& loop, int thread);
  void run_stealing(const Loop& loop, int thread);
  void work(int thread);

  const int n_threads_;
  Loop loop_;                               // written before generation_ is bumped
  alignas(64) std::atomic<uint32_t> generation_{0};  // bumped to publish loop_; workers wait on it
  alignas(64) std::atomic<int64_t> next_task_{0};    // dynamic loops: the next task to hand out
  alignas(64) std::atomic<int> finished_{0};         // workers done with the current loop
  std::vector<Remaining> remaining_;                 // per thread, for Stealing loops
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr worker_error_;  // the first exception a worker's share threw (under error_mutex_)
  std::vector<std::thread> workers_;
};

// body(task, thread) for every task in [0, n_tasks): by pool->run() when `worth_threads` and there
// is a pool of more than one thread and more than one task; otherwise on the calling thread, in
// order, as thread 0. For loops that are sometimes too short to pay for waking the workers.
template <class Body>
void parallel_for(WorkerPool* pool, bool worth_threads, int64_t n_tasks, Schedule schedule, Body&& body) {
  if (worth_threads && pool && pool->n_threads() > 1 && n_tasks > 1) {
    pool->run(n_tasks, schedule, body);
    return;
  }
  for (int64_t task = 0; task < n_tasks; ++task) body(task, 0);
}

}  // namespace nucleus
