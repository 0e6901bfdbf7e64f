// One generation request as the engine tracks it (vLLM's Request / nano-vllm's Sequence).
//
// `tokens` is the prompt followed by the outputs so far. num_computed_tokens of them have their
// keys and values in the KV cache; a step computes some more (a prefill chunk, or the one new
// token of a decode), and when it reaches tokens.size() the request samples its next token.
// A speculative request's step computes its last token plus the drafts; verification then keeps
// the accepted drafts and one more token, and num_computed_tokens falls back to tokens.size() − 1.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/kv_cache.h"
#include "sampling/sampler.h"
#include "sampling/stop_conditions.h"
#include "speculative/proposer.h"
#include "speculative/speculative_stats.h"
#include "structured/grammar.h"
#include "structured/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {

enum class RequestStatus { waiting, running, finished };

struct RequestOptions {
  SamplingParams sampling;
  StopParams stop;               // max_tokens, min_tokens, stop strings, ignore_eos
  bool return_logits = false;    // copy each sampled position's raw logits into the output
  // Speculative decoding: before each step the proposer drafts up to num_speculative_tokens (γ),
  // and the target verifies them in the same forward pass as every other request's tokens
  // (rejection sampling with the request's sampler chain and seed). Null or γ = 0: plain decoding.
  // The proposer serves this request alone (it may keep per-sequence state, e.g. a draft KV cache).
  std::shared_ptr<Proposer> proposer;
  int32_t num_speculative_tokens = 0;
  // Structured output: every sampled token keeps the output a prefix of a sentence of this grammar
  // (tokens that would break it are masked to −inf before the sampler chain; end-of-generation is
  // allowed exactly when the output is complete). Null: unconstrained. Needs the engine's tokenizer.
  std::shared_ptr<const Grammar> grammar;
  // Lazy structured output (tool_choice "auto"): the grammar applies from the first occurrence of this
  // text in the output on (TokenConstraint's lazy form); empty: from the first token.
  std::string grammar_trigger;
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
  std::unique_ptr<TokenConstraint> constraint;          // when options.grammar is set

  // KV cache bookkeeping (kv_cache_manager.h).
  std::vector<int32_t> block_table;     // block ids for positions 0, block_size, 2·block_size, ...
  std::vector<uint64_t> block_hashes;   // prefix hashes of the full blocks registered so far
  // Sliding-window layers' blocks in the window pool (when the engine has one), same indexing; −1
  // for blocks wholly before the window of every token still to come (freed).
  std::vector<int32_t> window_block_table;
  int64_t num_preemptions = 0;

  // Speculative decoding: this step's drafts (they follow `tokens` in the batch) and the counters.
  DraftProposal draft;
  SpeculativeStats spec;
  // Recurrent models: the state slot as it was before this step's verification pass (ModelRunner
  // copies it when the pass carries drafts; the engine puts it back if one was rejected).
  KvCache::StateSnapshot state_before_pass;

  int64_t num_output_tokens() const { return static_cast<int64_t>(tokens.size()) - num_prompt_tokens; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  bool speculative() const { return options.proposer != nullptr && options.num_speculative_tokens > 0; }
  // How far the scheduler computes: every known token plus this step's drafts — except that a
  // speculative request's prefill stops before its last token, which then enters the first
  // verification pass together with the drafts (as in SpeculativeGenerator, so both agree).
  int64_t num_tokens_to_compute() const {
    if (speculative() && num_computed_tokens < num_tokens() - 1) return num_tokens() - 1;
    return num_tokens() + static_cast<int64_t>(draft.tokens.size());
  }
};

}  // namespace nucleus
