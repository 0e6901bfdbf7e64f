// Helpers shared by the engine tests: running requests to completion in one LLMEngine and
// comparing two runs bit for bit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/llm_engine.h"

namespace nucleus::test {

// What one request produced, gathered over every step.
struct EngineResult {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // per output token, when the request returns logits
  FinishReason reason = FinishReason::none;
  SpeculativeStats spec;  // the request's last reported speculative counters
  std::string text;       // the detokenized output (when run with a tokenizer)
};

// BOS then length − 1 ordinary token ids in [3, n_vocab), a function of the seed.
std::vector<int32_t> random_prompt(uint64_t seed, int64_t length, int64_t n_vocab);

// Submits every prompt with its options to one engine, steps it until all finish and returns the
// results by submission index. Fails the test if a request reports an error or KV blocks leak.
std::vector<EngineResult> run_engine(Model& model, const EngineConfig& config,
                                     const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<RequestOptions>& options, EngineStats* stats = nullptr,
                                     const Tokenizer* tokenizer = nullptr);

// Same tokens and bit-identical logits.
void expect_identical(const EngineResult& a, const EngineResult& b, const std::string& what);

}  // namespace nucleus::test
