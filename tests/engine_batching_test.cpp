// Continuous batching on real models: batch invariance bit for bit (alone vs among 31 others,
// prefix caching on/off, any chunk size, after preemption; f32 and f16 KV caches), KV memory accounting and leaks,
// and prefix caching computing only new tokens.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "core/error.h"
#include "core/rng.h"
#include "engine/llm_engine.h"
#include "engine/model_source.h"
#include "engine_test_helpers.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

using Result = test::EngineResult;
using test::expect_identical;
using test::random_prompt;

RequestOptions options_for(int variant, int32_t max_tokens) {
  RequestOptions o;
  o.return_logits = true;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  if (variant % 2 == 0) {
    o.sampling.temperature = 0.0f;  // greedy
  } else {
    o.sampling.temperature = 0.9f;
    o.sampling.top_p = 0.9f;
    o.sampling.seed = 1000 + static_cast<uint64_t>(variant);
  }
  return o;
}

// One model with one KV cache type (the f16 cache must be batch invariant bit for bit too).
struct BatchCase {
  const char* model;
  KvType kv_type;
};

class BatchInvariance : public testing::TestWithParam<BatchCase> {};

TEST_P(BatchInvariance, AloneEqualsAmong31OthersAtAnyChunkSizeCachingAndPreemption) {
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load_model(ModelSource{test::shared_path(GetParam().model), "", {}});
  Model& model = *loaded.model;
  const int64_t n_vocab = model.hparams().n_vocab;
  const int n_requests = 32;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestOptions> options;
  for (int i = 0; i < n_requests; ++i) {
    prompts.push_back(random_prompt(static_cast<uint64_t>(i), 5 + (i * 37) % 90, n_vocab));
    options.push_back(options_for(i, 6 + i % 7));
  }
  // The two requests under test: one greedy (0) and one seeded sampling (1), each run alone.
  // Pools sized for the test (the default 256 MB pool costs more to allocate than these runs).
  EngineConfig alone_config;
  alone_config.n_threads = 2;
  alone_config.num_blocks = 16;
  alone_config.kv_type = GetParam().kv_type;
  std::vector<Result> alone;
  for (int i : {0, 1}) alone.push_back(test::run_engine(model, alone_config, {prompts[i]}, {options[i]})[0]);

  struct Variant {
    const char* name;
    int64_t max_batched_tokens;
    bool prefix_caching;
    int64_t num_blocks;
  };
  const Variant variants[] = {
      {"batched, budget 512, caching on", 512, true, 512},
      {"batched, budget 7 (tiny chunks), caching off", 7, false, 512},
      {"batched, budget 64, caching on", 64, true, 512},
      {"batched, pool of 10 blocks (forces preemption)", 256, true, 10},
  };
  for (const Variant& v : variants) {
    EngineConfig config;
    config.n_threads = 2;
    config.max_num_batched_tokens = v.max_batched_tokens;
    config.enable_prefix_caching = v.prefix_caching;
    config.num_blocks = v.num_blocks;
    config.kv_type = GetParam().kv_type;
    EngineStats stats;
    std::vector<Result> together = test::run_engine(model, config, prompts, options, &stats);
    for (int i : {0, 1}) expect_identical(alone[static_cast<size_t>(i)], together[static_cast<size_t>(i)], v.name);
    if (v.num_blocks < 512) {
      EXPECT_GT(stats.preemptions, 0) << "the small pool should have forced preemption";
      // Under preemption every request, not only the two above, must finish as it would alone.
      for (int i = 2; i < n_requests; ++i) {
        const Result solo = test::run_engine(model, alone_config, {prompts[static_cast<size_t>(i)]}, {options[static_cast<size_t>(i)]})[0];
        expect_identical(solo, together[static_cast<size_t>(i)], std::string(v.name) + ", request " + std::to_string(i));
      }
    }
  }
}

const BatchCase kBatchCases[] = {
    {"models/stories260K.gguf", KvType::f32}, {"models/test/llama-spm-q4_0.gguf", KvType::f32},
    {"models/test/qwen2-f16.gguf", KvType::f32},
    // K-quant mixtures: their many-token steps run the packed K-quant kernels (kernels/packed_kquant.h)
    // where the table has them, else the K-quant tiles (kernels/kquant_tile.h)
    {"models/test/llama-spm-q4_k_m.gguf", KvType::f32}, {"models/test/llama-spm-q5_k_m.gguf", KvType::f32},
    // every architecture family (sliding windows, MoE, KV sharing, ...)
    {"models/arch/llama31.gguf", KvType::f32}, {"models/arch/mixtral.gguf", KvType::f32},
    {"models/arch/qwen3.gguf", KvType::f32}, {"models/arch/qwen3moe.gguf", KvType::f32},
    {"models/arch/phi3.gguf", KvType::f32}, {"models/arch/gemma2.gguf", KvType::f32},
    {"models/arch/gemma3.gguf", KvType::f32}, {"models/arch/gemma4.gguf", KvType::f32},
    // the f16 KV cache (--kv-type f16)
    {"models/stories260K.gguf", KvType::f16}, {"models/test/qwen2-f16.gguf", KvType::f16},
};

INSTANTIATE_TEST_SUITE_P(SharedModels, BatchInvariance, testing::ValuesIn(kBatchCases),
                         [](const testing::TestParamInfo<BatchCase>& info) {
                           std::string n = info.param.model;
                           n += info.param.kv_type == KvType::f16 ? "_kv_f16" : "";
                           for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(EngineMemory, SixtyFourRequestsWasteUnderFourPercentAndThePoolComesBackWhole) {
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load_model(ModelSource{test::shared_path("models/stories260K.gguf"), "", {}});
  EngineConfig config;
  config.n_threads = 2;
  config.num_blocks = 1600;  // 25,600 slots; the 64 requests below need about 23,000
  config.max_num_batched_tokens = 32768;
  LLMEngine engine(*loaded.model, nullptr, config);
  std::vector<int64_t> ids;
  for (int i = 0; i < 64; ++i)
    ids.push_back(engine.add_request(random_prompt(static_cast<uint64_t>(i) + 77, 250 + (i * 37) % 150, 512),
                                     options_for(i, 20 + i % 30)));
  const double pool_slots = static_cast<double>(config.num_blocks * config.block_size);
  double worst_waste = 0.0;
  int steps = 0, steps_with_all_running = 0;
  while (engine.has_unfinished()) {
    engine.step();
    ++steps;
    const EngineStats s = engine.stats();
    if (s.num_running == 64) ++steps_with_all_running;
    // Slots allocated to requests but holding no token: only the tail of each last block.
    const double waste = static_cast<double>(s.kv_blocks_used * config.block_size - s.kv_tokens_stored);
    EXPECT_GE(waste, 0.0);
    EXPECT_LT(waste, 64.0 * config.block_size);
    worst_waste = std::max(worst_waste, waste / pool_slots);
    if (steps == 10)
      for (int i = 0; i < 64; i += 3) engine.abort(ids[static_cast<size_t>(i)]);  // a third aborted mid-flight
  }
  EXPECT_GT(steps_with_all_running, 5);
  EXPECT_LT(worst_waste, 0.04);
  RecordProperty("worst_waste_fraction", std::to_string(worst_waste));
  EXPECT_EQ(engine.block_pool().num_free_blocks(), engine.block_pool().num_blocks());
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

TEST(EnginePrefixCaching, SecondRequestComputesOnlyItsNewTokens) {
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load_model(ModelSource{test::shared_path("models/stories260K.gguf"), "", {}});
  const std::vector<int32_t> prefix = random_prompt(4242, 1000, 512);
  std::vector<int32_t> first = prefix, second = prefix;
  for (int i = 0; i < 20; ++i) first.push_back(static_cast<int32_t>(100 + i));
  for (int i = 0; i < 30; ++i) second.push_back(static_cast<int32_t>(200 + i));
  const RequestOptions options = options_for(0, 8);

  EngineConfig config;
  config.n_threads = 2;
  config.max_num_batched_tokens = 2048;
  config.num_blocks = 256;
  LLMEngine engine(*loaded.model, nullptr, config);
  std::map<int64_t, Result> results;
  auto drain = [&] {
    while (engine.has_unfinished())
      for (const RequestOutput& out : engine.step()) {
        Result& r = results[out.request_id];
        r.tokens.insert(r.tokens.end(), out.new_tokens.begin(), out.new_tokens.end());
        for (const auto& l : out.logits) r.logits.push_back(l);
      }
  };
  engine.add_request(first, options);
  drain();
  const int64_t computed_before = engine.stats().computed_tokens;
  const int64_t second_id = engine.add_request(second, options);
  drain();
  const EngineStats s = engine.stats();
  // The 1,000-token prefix covers 62 full blocks (992 tokens); only the rest is computed.
  const int64_t cached = 1000 / config.block_size * config.block_size;
  EXPECT_EQ(s.prefix_cached_tokens, cached);
  EXPECT_EQ(s.computed_tokens - computed_before, static_cast<int64_t>(second.size()) - cached + 7);  // + 7 decodes
  // Same output as without caching.
  EngineConfig no_cache = config;
  no_cache.enable_prefix_caching = false;
  Result reference = test::run_engine(*loaded.model, no_cache, {second}, {options})[0];
  expect_identical(results[second_id], reference, "prefix-cached vs uncached");
}

TEST(EnginePrefixCaching, RequestsSubmittedTogetherWithOnePromptComputeItOnce) {
  // n > 1 (the server submits one request per choice) and identical prompts arriving at once:
  // the first computes the prompt, the others wait for its blocks and take them from the cache,
  // whether the prompt fits one step or is prefilled in chunks. Each output is unchanged.
  NUCLEUS_REQUIRE_SHARED();
  auto loaded = load_model(ModelSource{test::shared_path("models/stories260K.gguf"), "", {}});
  const std::vector<int32_t> prompt = random_prompt(77, 200, 512);
  const int32_t max_tokens = 6;
  const int n = 4;
  std::vector<RequestOptions> options;
  for (int i = 0; i < n; ++i) options.push_back(options_for(2 * i + 1, max_tokens));  // seeded, each its own seed
  for (int64_t budget : {512, 64}) {
    EngineConfig config;
    config.num_blocks = 128;
    config.max_num_batched_tokens = budget;
    EngineStats stats;
    const std::vector<Result> together = test::run_engine(*loaded.model, config, std::vector<std::vector<int32_t>>(n, prompt), options, &stats);
    const int64_t shared = 200 / config.block_size * config.block_size;  // 12 full blocks: 192 tokens
    EXPECT_EQ(stats.prefix_cached_tokens, (n - 1) * shared) << "budget " << budget;
    EXPECT_EQ(stats.computed_tokens, 200 + (n - 1) * (200 - shared) + n * (max_tokens - 1)) << "budget " << budget;
    EngineConfig no_cache = config;
    no_cache.enable_prefix_caching = false;
    for (int i = 0; i < n; ++i) {
      const Result alone = test::run_engine(*loaded.model, no_cache, {prompt}, {options[static_cast<size_t>(i)]})[0];
      expect_identical(together[static_cast<size_t>(i)], alone, "request " + std::to_string(i) + ", budget " + std::to_string(budget));
    }
  }
}

}  // namespace
}  // namespace nucleus
