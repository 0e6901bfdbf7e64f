// One sequence through the model with a contiguous KV cache: the simple path used by
// `nucleus generate` / `logits` until the batching engine takes over. It owns block table
// [0, 1, 2, ...] over its own pool, so it exercises the same block-table forward.
#pragma once
#include <vector>

#include "model/model.h"

namespace nucleus {

class SequenceRunner {
 public:
  // n_ctx: maximum positions this sequence may reach (≤ the model's training context).
  SequenceRunner(Model& model, int64_t n_ctx, int n_threads);

  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_past() const { return n_past_; }  // tokens already in the cache

  // Appends tokens; returns logits [n_vocab] of the last one (all_logits: [n, n_vocab] of each).
  // Throws Error when the context would overflow.
  const std::vector<float>& feed(const std::vector<int32_t>& tokens, bool all_logits = false);
  void reset() { n_past_ = 0; }

 private:
  Model& model_;
  int64_t n_ctx_;
  int n_threads_;
  int64_t n_past_ = 0;
  KvCache kv_;
  std::vector<int32_t> block_table_;
  std::vector<float> logits_;
};

}  // namespace nucleus
