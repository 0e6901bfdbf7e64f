// The sliding-window KV pool (kv_cache_manager.h): the sliding-window layers of Gemma-style models
// keep their K/V in a pool of their own whose blocks go back once they fall out of every window,
// while the full-attention layers keep theirs. Results are bit-identical to one pool for every layer;
// a growing sequence holds a bounded number of window blocks; the same bytes fit more requests;
// prefix caching still hits.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/llm_engine.h"
#include "engine/model_source.h"
#include "engine_test_helpers.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

using test::random_prompt;

RequestOptions greedy(int32_t max_tokens, bool logits = true) {
  RequestOptions o;
  o.return_logits = logits;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  o.sampling.temperature = 0.0f;
  return o;
}

LoadedModel load(const char* name) { return load_model(ModelSource{test::shared_path(std::string("models/arch/") + name), "", {}}); }

TEST(EngineWindowKv, ResultsEqualOnePoolForEveryLayer) {
  NUCLEUS_REQUIRE_SHARED();
  for (const char* name : {"gemma2.gguf", "gemma3.gguf", "gemma4.gguf"}) {
    auto loaded = load(name);
    std::vector<std::vector<int32_t>> prompts;
    std::vector<RequestOptions> options;
    for (int i = 0; i < 6; ++i) {
      prompts.push_back(random_prompt(static_cast<uint64_t>(i) + 300, 20 + 37 * i, loaded.model->hparams().n_vocab));
      options.push_back(greedy(12));
    }
    EngineConfig split, unified;
    split.n_threads = unified.n_threads = 2;
    split.num_blocks = unified.num_blocks = 128;
    split.max_num_batched_tokens = unified.max_num_batched_tokens = 48;  // chunked prefills cross windows
    unified.window_kv_pool = false;
    const auto a = test::run_engine(*loaded.model, split, prompts, options);
    const auto b = test::run_engine(*loaded.model, unified, prompts, options);
    for (size_t i = 0; i < prompts.size(); ++i) test::expect_identical(a[i], b[i], std::string(name) + " request " + std::to_string(i));
  }
}

TEST(EngineWindowKv, AGrowingSequenceHoldsOnlyItsWindowInTheWindowPool) {
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load("gemma2.gguf");  // window 16 on layers 0 and 2
  EngineConfig config;
  config.n_threads = 2;
  config.num_blocks = 64;
  config.max_num_batched_tokens = 32;
  LLMEngine engine(*loaded.model, nullptr, config);
  ASSERT_NE(engine.window_block_pool(), nullptr);
  engine.add_request(random_prompt(5, 300, loaded.model->hparams().n_vocab), greedy(40, false));
  int64_t most_window = 0, most_main = 0;
  while (engine.has_unfinished()) {
    engine.step();
    most_window = std::max(most_window, engine.stats().kv_window_blocks_used);
    most_main = std::max(most_main, engine.stats().kv_blocks_used);
  }
  // 340 positions: 22 main blocks; the window pool holds the window (16) plus a 32-token chunk.
  EXPECT_EQ(most_main, (340 + 15) / 16);
  EXPECT_LE(most_window, (16 - 1 + 32 + 15) / 16 + 1);
  EXPECT_EQ(engine.window_block_pool()->num_free_blocks(), engine.window_block_pool()->num_blocks());
}

TEST(EngineWindowKv, TheSameBytesFitMoreLongRequests) {
  // gemma3: 5 local layers : 1 global, window 24. With one pool every position of a request costs
  // all six layers; with the window pool the main pool pays one layer per position and the window
  // pool a bounded number of blocks per request. 2 MiB of KV: 85 blocks of all six layers, or 68
  // window-pool blocks plus 172 main ones. Long requests (200 + 80 tokens) then hold about twice
  // the tokens at once.
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load("gemma3.gguf");
  struct Peak {
    int64_t running = 0, tokens = 0;
  };
  auto peak = [&](bool window_pool) {
    EngineConfig config;
    config.n_threads = 2;
    config.kv_cache_bytes = 2 << 20;
    config.max_num_seqs = 16;
    config.max_num_batched_tokens = 64;
    config.window_kv_pool = window_pool;
    LLMEngine engine(*loaded.model, nullptr, config);
    for (int i = 0; i < 16; ++i) engine.add_request(random_prompt(static_cast<uint64_t>(i), 200, 512), greedy(80, false));
    Peak p;
    while (engine.has_unfinished()) {
      engine.step();
      const EngineStats s = engine.stats();
      p.running = std::max(p.running, s.num_running);
      p.tokens = std::max(p.tokens, s.kv_tokens_stored);
    }
    return p;
  };
  const Peak unified = peak(false), split = peak(true);
  std::printf("[ gemma3   ] 2 MiB of KV, one pool: %lld requests / %lld tokens at once; window pool: %lld / %lld\n",
              static_cast<long long>(unified.running), static_cast<long long>(unified.tokens),
              static_cast<long long>(split.running), static_cast<long long>(split.tokens));
  EXPECT_LE(unified.tokens, 85 * 16);
  EXPECT_GT(split.tokens, 85 * 16);  // more than one pool could ever hold
  EXPECT_GE(split.tokens, unified.tokens * 17 / 10);
  EXPECT_GT(split.running, unified.running);
}

TEST(EngineWindowKv, PrefixCachingHitsThroughTheWindowPool) {
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load("gemma2.gguf");
  const std::vector<int32_t> prefix = random_prompt(4242, 160, 512);
  std::vector<int32_t> first = prefix, second = prefix;
  first.push_back(10);
  second.push_back(11);
  EngineConfig config;
  config.n_threads = 2;
  config.num_blocks = 64;
  LLMEngine engine(*loaded.model, nullptr, config);
  engine.add_request(first, greedy(4, false));
  while (engine.has_unfinished()) engine.step();
  const int64_t computed_before = engine.stats().computed_tokens;
  const int64_t id = engine.add_request(second, greedy(4));
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
  while (engine.has_unfinished())
    for (const RequestOutput& out : engine.step())
      if (out.request_id == id) {
        tokens.insert(tokens.end(), out.new_tokens.begin(), out.new_tokens.end());
        logits.insert(logits.end(), out.logits.begin(), out.logits.end());
      }
  // 160 tokens are 10 full blocks: all hit, so only the last prompt token and the outputs run.
  EXPECT_EQ(engine.stats().prefix_cached_tokens, 160);
  EXPECT_EQ(engine.stats().computed_tokens - computed_before, 1 + 3);
  // What the hit computes equals a fresh engine's computation of the whole prompt.
  const auto fresh = test::run_engine(*loaded.model, config, {second}, {greedy(4)});
  EXPECT_EQ(tokens, fresh[0].tokens);
  EXPECT_EQ(logits, fresh[0].logits);
}

}  // namespace
}  // namespace nucleus
