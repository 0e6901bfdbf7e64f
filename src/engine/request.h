// One generation request as the engine tracks it (vLLM's Request / nano-vllm's Sequence).
//
// `tokens` is the prompt followed by the outputs so far. num_computed_tokens of them have their
// keys and values in the KV cache; a step computes some more (a prefill chunk, or the one new
// token of a decode), and when it reaches tokens.size() the request samples its next token.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "sampling/stop_conditions.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {

enum class RequestStatus { waiting, running, finished };

struct RequestOptions {
  SamplingParams sampling;
  StopParams stop;               // max_tokens, min_tokens, stop strings, ignore_eos
  bool return_logits = false;    // copy each sampled position's raw logits into the output
};

struct Request {
  int64_t id = 0;
  uint64_t arrival = 0;                 // admission order; preemption picks the largest
  std::vector<int32_t> tokens;          // prompt, then outputs
  int64_t num_prompt_tokens = 0;
  int64_t num_computed_tokens = 0;      // tokens whose K/V are in the cache
  RequestStatus status = RequestStatus::waiting;
  RequestOptions options;
  std::unique_ptr<SamplerChain> sampler;
  std::unique_ptr<StopChecker> stop;
  std::unique_ptr<IncrementalDetokenizer> detokenizer;  // when the engine has a tokenizer

  // KV cache bookkeeping (kv_cache_manager.h).
  std::vector<int32_t> block_table;     // block ids for positions 0, block_size, 2·block_size, ...
  std::vector<uint64_t> block_hashes;   // prefix hashes of the full blocks registered so far
  int64_t num_preemptions = 0;

  int64_t num_output_tokens() const { return static_cast<int64_t>(tokens.size()) - num_prompt_tokens; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace nucleus
