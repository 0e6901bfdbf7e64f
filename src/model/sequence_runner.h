// One sequence through a model with its own contiguous KV cache that can be rolled back: the
// simple path of `nucleus generate --logprobs`, `logits`, `chat`, the explainer, and the cache
// behind both the target and the draft of single-sequence speculative decoding.
//
// It remembers which tokens its KV holds. Rolling back (truncate) only lowers n_past: the forward
// pass reads positions ≤ the one it computes, so entries past n_past are dead until overwritten
// by the next feed. It owns block table [0, 1, 2, ...] over its own pool, the same block-table
// forward as the batching engine.
//
// A model with recurrent layers (Qwen3.5) also keeps one recurrent state slot. That state cannot be
// rolled back: after truncate the next feed recomputes the kept prefix from position 0 in the same
// forward step (correct, at the cost of a prefill of the prefix).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"

namespace nucleus {

class SequenceRunner {
 public:
  // n_ctx: the most positions the sequence may reach (prompt + outputs + drafts).
  SequenceRunner(Model& model, int64_t n_ctx, int n_threads);

  Model& model() { return model_; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_past() const { return static_cast<int64_t>(cached_tokens_.size()); }
  const std::vector<int32_t>& cached_tokens() const { return cached_tokens_; }  // [n_past]

  // Appends tokens; returns logits [n_vocab] of the last one, or [n, n_vocab] of each when
  // all_logits. Throws Error when the context would overflow.
  const std::vector<float>& feed(std::span<const int32_t> tokens, bool all_logits = false);
  const std::vector<float>& feed(const std::vector<int32_t>& tokens, bool all_logits = false) {
    return feed(std::span<const int32_t>(tokens), all_logits);
  }
  // Forgets every position ≥ n_past (n_past ≤ the current one).
  void truncate(int64_t n_past);
  // Keeps the longest cached prefix of `tokens` (at most max_keep tokens); returns its length.
  int64_t keep_common_prefix(std::span<const int32_t> tokens, int64_t max_keep);
  void reset() { truncate(0); }

 private:
  Model& model_;
  int64_t n_ctx_;
  int n_threads_;
  KvCache kv_;
  std::vector<int32_t> block_table_;    // [num_blocks] = 0, 1, 2, ...
  std::vector<int32_t> cached_tokens_;  // [n_past] the tokens whose K/V the cache holds
  std::vector<float> logits_;           // [n_outputs, n_vocab] of the last feed
};

}  // namespace nucleus
