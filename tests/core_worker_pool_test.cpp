// core/worker_pool.h: every task runs exactly once, on the thread the schedule says (Stealing: a slow
// thread's last tasks go to the others), its writes seen by
// the caller when run() returns — across many back-to-back loops (the spinning hand-off) and after the
// workers have gone to sleep (the futex hand-off); parallel_for's choice between the pool and the
// calling thread. Built into the TSan tests too.
#include "core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace nucleus {
namespace {

TEST(WorkerPool, RunsEveryTaskOnceOnItsScheduledThread) {
  for (int n_threads : {1, 2, 3, 4}) {
    WorkerPool pool(n_threads);
    EXPECT_EQ(pool.n_threads(), n_threads);
    for (int64_t n_tasks : {0, 1, 2, 3, 7, 1000}) {
      for (Schedule schedule : {Schedule::Static, Schedule::Dynamic}) {
        std::vector<int> runs(static_cast<size_t>(n_tasks), 0), thread_of(static_cast<size_t>(n_tasks), -1);
        pool.run(n_tasks, schedule, [&](int64_t task, int thread) {
          ++runs[static_cast<size_t>(task)];  // each task is one thread's, so no two threads write one slot
          thread_of[static_cast<size_t>(task)] = thread;
        });
        for (int64_t t = 0; t < n_tasks; ++t) {
          ASSERT_EQ(runs[static_cast<size_t>(t)], 1) << n_threads << " threads, task " << t << " of " << n_tasks;
          const int thread = thread_of[static_cast<size_t>(t)];
          ASSERT_GE(thread, 0);
          ASSERT_LT(thread, n_threads);
          if (schedule == Schedule::Static) {  // static: thread i has the contiguous share [n·i/N, n·(i+1)/N)
            EXPECT_TRUE(n_tasks * thread / n_threads <= t && t < n_tasks * (thread + 1) / n_threads)
                << "task " << t << " of " << n_tasks << " ran on thread " << thread << " of " << n_threads;
          }
        }
      }
    }
  }
}

TEST(WorkerPool, StealingRunsEveryTaskOnceAndTakesASlowThreadsLastTasks) {
  for (int n_threads : {1, 2, 3, 4}) {
    WorkerPool pool(n_threads);
    for (int64_t n_tasks : {0, 1, 2, 3, 7, 1000}) {
      std::vector<int> runs(static_cast<size_t>(n_tasks), 0), thread_of(static_cast<size_t>(n_tasks), -1);
      pool.run(n_tasks, Schedule::Stealing, [&](int64_t task, int thread) {
        ++runs[static_cast<size_t>(task)];
        thread_of[static_cast<size_t>(task)] = thread;
      });
      for (int64_t t = 0; t < n_tasks; ++t) {
        ASSERT_EQ(runs[static_cast<size_t>(t)], 1) << n_threads << " threads, task " << t << " of " << n_tasks;
        ASSERT_GE(thread_of[static_cast<size_t>(t)], 0);
        ASSERT_LT(thread_of[static_cast<size_t>(t)], n_threads);
      }
    }
  }
  // Thread 1's tasks take 2 ms each on thread 1 and nothing elsewhere: thread 0 finishes its half,
  // then takes thread 1's from the back, so thread 1 runs a prefix of its share, in order, and
  // thread 0 the rest (its own share in order first).
  WorkerPool pool(2);
  constexpr int64_t kTasks = 16;
  std::vector<int> thread_of(kTasks, -1);
  std::vector<int64_t> order[2];
  pool.run(kTasks, Schedule::Stealing, [&](int64_t task, int thread) {
    thread_of[static_cast<size_t>(task)] = thread;
    order[thread].push_back(task);
    if (thread == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  for (int64_t t = 0; t < kTasks / 2; ++t) EXPECT_EQ(thread_of[static_cast<size_t>(t)], 0) << "task " << t;
  int64_t stolen = 0;
  for (int64_t t = kTasks / 2; t < kTasks; ++t) {
    if (thread_of[static_cast<size_t>(t)] == 0) ++stolen;
    else EXPECT_EQ(stolen, 0) << "thread 1 ran task " << t << " after thread 0 had taken an earlier one of its share";
  }
  EXPECT_GE(stolen, kTasks / 4) << "thread 0 idled while thread 1 slept through its share";
  ASSERT_EQ(order[0].size(), static_cast<size_t>(kTasks / 2 + stolen));
  for (int64_t i = 0; i < kTasks / 2; ++i) EXPECT_EQ(order[0][static_cast<size_t>(i)], i);
  for (int64_t i = 0; i < stolen; ++i)  // the stolen ones from the back
    EXPECT_EQ(order[0][static_cast<size_t>(kTasks / 2 + i)], kTasks - 1 - i);
}

TEST(WorkerPool, ManyShortLoopsBackToBack) {
  // The decode pattern: loops of a few tasks, one after another, the workers still spinning.
  WorkerPool pool(2);
  std::vector<int64_t> sums(2, 0);
  int64_t expected = 0;
  for (int loop = 0; loop < 20000; ++loop) {
    const int64_t n_tasks = 1 + loop % 5;
    pool.run(n_tasks, loop % 2 == 1 ? Schedule::Dynamic : Schedule::Static, [&](int64_t task, int thread) { sums[static_cast<size_t>(thread)] += task + 1; });
    expected += n_tasks * (n_tasks + 1) / 2;
  }
  EXPECT_EQ(sums[0] + sums[1], expected);
}

TEST(WorkerPool, WakesWorkersThatWentToSleep) {
  // Past the spin the workers sleep on a futex; a loop must still reach them (and use them).
  WorkerPool pool(3);
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    std::atomic<int> tasks{0};
    std::vector<int> per_thread(3, 0);
    pool.run(3, Schedule::Static, [&](int64_t, int thread) {
      tasks.fetch_add(1);
      ++per_thread[static_cast<size_t>(thread)];
    });
    EXPECT_EQ(tasks.load(), 3);
    EXPECT_EQ(per_thread, std::vector<int>({1, 1, 1})) << "round " << round;  // static: one task per thread
  }
}

TEST(WorkerPool, RethrowsATasksExceptionAfterEveryThreadIsDone) {
  WorkerPool pool(2);
  for (int throwing_thread : {0, 1}) {
    std::atomic<int> ran{0};
    EXPECT_THROW(pool.run(8, Schedule::Static,
                          [&](int64_t task, int thread) {
                            if (thread == throwing_thread && task % 4 == 1) throw std::runtime_error("task failed");
                            ran.fetch_add(1);
                          }),
                 std::runtime_error)
        << "thrown on thread " << throwing_thread;
    // The throwing share stopped at its second task; the other share ran all four of its tasks.
    EXPECT_EQ(ran.load(), 5) << "thrown on thread " << throwing_thread;
    int64_t sum = 0;  // and the pool still runs loops
    std::vector<int64_t> per_thread(2, 0);
    pool.run(10, Schedule::Dynamic, [&](int64_t task, int thread) { per_thread[static_cast<size_t>(thread)] += task; });
    for (int64_t v : per_thread) sum += v;
    EXPECT_EQ(sum, 45);
  }
}

TEST(WorkerPool, DestroysWhetherItsWorkersSpinOrSleep) {
  {
    WorkerPool spinning(2);
    spinning.run(4, Schedule::Static, [](int64_t, int) {});
  }  // destroyed right after a loop: its worker is still spinning
  {
    WorkerPool sleeping(2);
    sleeping.run(4, Schedule::Dynamic, [](int64_t, int) {});
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }  // its worker sleeps on the futex
  WorkerPool never_used(4);  // its workers never saw a loop
}  // a pool that fails to stop its workers hangs here (the test's timeout) instead of returning

TEST(WorkerPool, ParallelForUsesThePoolOnlyWhenItIsWorthIt) {
  // parallel_for runs every task once in each case; on the pool's threads only when asked to and
  // there are threads and tasks to share, otherwise in order on the calling thread as thread 0.
  WorkerPool pool(2), alone(1);
  struct Case {
    WorkerPool* pool;
    bool worth_threads;
    int64_t n_tasks;
    bool on_pool;
  };
  for (const Case& c : {Case{&pool, true, 64, true}, Case{&pool, false, 64, false}, Case{&pool, true, 1, false},
                        Case{&alone, true, 64, false}, Case{nullptr, true, 64, false}, Case{&pool, true, 0, false}}) {
    for (Schedule schedule : {Schedule::Static, Schedule::Dynamic}) {
      std::vector<int> runs(static_cast<size_t>(c.n_tasks), 0), thread_of(static_cast<size_t>(c.n_tasks), -1);
      std::vector<int64_t> order;  // only appended to when the loop is serial
      parallel_for(c.pool, c.worth_threads, c.n_tasks, schedule, [&](int64_t task, int thread) {
        ++runs[static_cast<size_t>(task)];
        thread_of[static_cast<size_t>(task)] = thread;
        if (!c.on_pool) order.push_back(task);
      });
      bool used_second_thread = false;
      for (int64_t t = 0; t < c.n_tasks; ++t) {
        ASSERT_EQ(runs[static_cast<size_t>(t)], 1);
        used_second_thread |= thread_of[static_cast<size_t>(t)] == 1;
      }
      if (c.on_pool && schedule == Schedule::Static) {
        EXPECT_TRUE(used_second_thread);  // static: thread 1 owns the second half
      }
      if (!c.on_pool) {
        EXPECT_FALSE(used_second_thread);
        for (int64_t t = 0; t < c.n_tasks; ++t) EXPECT_EQ(order[static_cast<size_t>(t)], t);
      }
    }
  }
}

}  // namespace
}  // namespace nucleus
