// AsyncEngine: the engine behind a loop thread. Streams deliver every token, abort() frees the KV
// blocks, and many threads may submit, read, abort and ask for stats at once (this file also runs in
// the ThreadSanitizer build).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "core/rng.h"
#include "engine/async_engine.h"
#include "engine/model_source.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

std::vector<int32_t> random_prompt(uint64_t seed, int64_t length, int64_t n_vocab) {
  std::vector<int32_t> p = {1};
  for (int64_t i = 1; i < length; ++i)
    p.push_back(static_cast<int32_t>(3 + splitmix64(seed * 1000 + static_cast<uint64_t>(i)) % static_cast<uint64_t>(n_vocab - 3)));
  return p;
}

RequestOptions greedy(int32_t max_tokens) {
  RequestOptions o;
  o.sampling.temperature = 0.0f;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  return o;
}

TEST(AsyncEngine, StreamsTokensAndAbortsFreeBlocks) {
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load_model(ModelSource{test::shared_path("models/stories260K.gguf"), "", {}});
  EngineConfig config;
  config.n_threads = 1;
  config.num_blocks = 256;
  AsyncEngine async(std::make_unique<LLMEngine>(*loaded.model, loaded.tokenizer.get(), config));
  auto a = async.submit(random_prompt(1, 20, 512), greedy(30));
  auto b = async.submit(random_prompt(2, 20, 512), greedy(1000));
  RequestOutput out;
  int tokens = 0;
  bool finished = false;
  while (a->next(out)) {
    tokens += static_cast<int>(out.new_tokens.size());
    if (out.finished) {
      finished = true;
      EXPECT_EQ(out.finish_reason, FinishReason::length);
    }
  }
  EXPECT_TRUE(finished);
  EXPECT_EQ(tokens, 30);
  async.abort(b->id());
  bool aborted = false;
  while (b->next(out))
    if (out.finished) {
      aborted = out.aborted;
      EXPECT_LT(out.num_output_tokens, 1000) << "finished before the abort";
    }
  EXPECT_TRUE(aborted);
  EXPECT_EQ(async.stats().kv_blocks_used, 0);
  EXPECT_THROW(async.submit({}, greedy(30)), Error);
}

// Eight threads each submit requests, read some streams to the end and abort others half-way, while
// another thread polls stats(). Every completed stream has all its tokens; the pool ends empty.
TEST(AsyncEngine, ConcurrentSubmitReadAbortAndStats) {
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load_model(ModelSource{test::shared_path("models/stories260K.gguf"), "", {}});
  EngineConfig config;
  config.n_threads = 2;
  config.max_num_seqs = 16;
  config.num_blocks = 512;
  AsyncEngine async(std::make_unique<LLMEngine>(*loaded.model, loaded.tokenizer.get(), config));
  std::atomic<bool> stop_polling{false};
  std::thread poller([&] {
    while (!stop_polling) {
      const EngineStats s = async.stats();
      EXPECT_GE(s.kv_blocks_used, 0);
      std::this_thread::yield();
    }
  });
  constexpr int kThreads = 8, kRequestsPerThread = 4;
  std::atomic<int> completed{0}, aborted{0};
  std::vector<std::thread> users;
  for (int t = 0; t < kThreads; ++t) {
    users.emplace_back([&, t] {
      for (int r = 0; r < kRequestsPerThread; ++r) {
        const bool abort_it = (t + r) % 3 == 0;
        const int32_t max_tokens = abort_it ? 500 : 5 + 3 * r;
        auto stream = async.submit(random_prompt(static_cast<uint64_t>(t * 100 + r), 8 + t, 512), greedy(max_tokens));
        RequestOutput out;
        int tokens = 0;
        while (stream->next(out)) {
          tokens += static_cast<int>(out.new_tokens.size());
          if (abort_it && tokens >= 2 && !out.finished) async.abort(stream->id());
          if (out.finished && out.aborted) ++aborted;
          if (out.finished && !out.aborted) {
            EXPECT_EQ(tokens, max_tokens);
            ++completed;
          }
        }
      }
    });
  }
  for (std::thread& u : users) u.join();
  stop_polling = true;
  poller.join();
  EXPECT_EQ(completed + aborted, kThreads * kRequestsPerThread);
  EXPECT_GT(aborted, 0);
  // Aborted requests release their blocks at the loop's next step: allow it a moment.
  EngineStats s = async.stats();
  for (int i = 0; i < 500 && (s.kv_blocks_used != 0 || s.num_running + s.num_waiting != 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = async.stats();
  }
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.num_running + s.num_waiting, 0);
}

}  // namespace
}  // namespace nucleus
