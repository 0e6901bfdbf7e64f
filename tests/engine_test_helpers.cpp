#include "engine_test_helpers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "core/rng.h"

namespace nucleus::test {

std::vector<int32_t> random_prompt(uint64_t seed, int64_t length, int64_t n_vocab) {
  std::vector<int32_t> p = {1};
  for (int64_t i = 1; i < length; ++i)
    p.push_back(static_cast<int32_t>(3 + splitmix64(seed * 1000 + static_cast<uint64_t>(i)) % static_cast<uint64_t>(n_vocab - 3)));
  return p;
}

std::vector<EngineResult> run_engine(Model& model, const EngineConfig& config,
                                     const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<RequestOptions>& options, EngineStats* stats,
                                     const Tokenizer* tokenizer) {
  LLMEngine engine(model, tokenizer, config);
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < prompts.size(); ++i) index[engine.add_request(prompts[i], options[i])] = i;
  std::vector<EngineResult> results(prompts.size());
  while (engine.has_unfinished()) {
    for (const RequestOutput& out : engine.step()) {
      EngineResult& r = results[index.at(out.request_id)];
      EXPECT_TRUE(out.error.empty()) << out.error;
      r.tokens.insert(r.tokens.end(), out.new_tokens.begin(), out.new_tokens.end());
      for (const auto& l : out.logits) r.logits.push_back(l);
      r.spec = out.spec;
      r.text += out.text;
      if (out.finished) r.reason = out.finish_reason;
    }
  }
  EXPECT_EQ(engine.block_pool().num_free_blocks(), engine.block_pool().num_blocks()) << "KV blocks leaked";
  if (const BlockPool* window = engine.window_block_pool()) {
    EXPECT_EQ(window->num_free_blocks(), window->num_blocks()) << "window-pool KV blocks leaked";
  }
  if (stats) *stats = engine.stats();
  return results;
}

void expect_identical(const EngineResult& a, const EngineResult& b, const std::string& what) {
  ASSERT_EQ(a.tokens, b.tokens) << what;
  ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
  for (size_t i = 0; i < a.logits.size(); ++i)
    ASSERT_EQ(std::memcmp(a.logits[i].data(), b.logits[i].data(), a.logits[i].size() * sizeof(float)), 0)
        << what << ": logits differ at output " << i;
}

}  // namespace nucleus::test
