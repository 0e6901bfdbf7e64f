#include "model/sequence_runner.h"

#include "core/common_prefix.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"

namespace nucleus {

namespace {
constexpr int64_t kBlockSize = 16;
KvCacheShape contiguous_shape(const HParams& hp, int64_t n_ctx) {
  KvCacheShape shape{hp.n_layer, (n_ctx + kBlockSize - 1) / kBlockSize, kBlockSize, hp.kv_dim()};
  shape.recurrent = recurrent_state_shape(hp, 1);  // one slot for this one sequence (recurrent models)
  return shape;
}
}  // namespace

SequenceRunner::SequenceRunner(Model& model, int64_t n_ctx, int n_threads)
    : model_(model), n_ctx_(n_ctx), n_threads_(n_threads), kv_(contiguous_shape(model.hparams(), n_ctx)) {
  block_table_.resize(static_cast<size_t>(kv_.shape().num_blocks));
  std::iota(block_table_.begin(), block_table_.end(), 0);
}

const std::vector<float>& SequenceRunner::feed(std::span<const int32_t> tokens, bool all_logits) {
  if (tokens.empty()) throw Error("nothing to feed: empty token list");
  const int64_t n_past = this->n_past();
  const auto n = static_cast<int64_t>(tokens.size());
  if (n_past + n > n_ctx_)
    throw Error("context overflow: " + std::to_string(n_past + n) + " tokens exceed the context length " +
                std::to_string(n_ctx_));
  ForwardBatch batch;
  batch.block_tables.push_back(block_table_);
  if (kv_.has_recurrent_state()) {
    batch.state_slots.push_back(0);
    // After a rollback the recurrent state is ahead of n_past (it cannot be rolled back): the kept
    // prefix is recomputed, in this same step, from position 0.
    if (kv_.state_tokens(0) != n_past)
      for (int64_t i = 0; i < n_past; ++i) batch.add(cached_tokens_[static_cast<size_t>(i)], static_cast<int32_t>(i), 0, false);
  }
  for (int64_t i = 0; i < n; ++i)
    batch.add(tokens[static_cast<size_t>(i)], static_cast<int32_t>(n_past + i), 0, all_logits || i + 1 == n);
  logits_.resize(static_cast<size_t>(batch.n_outputs() * model_.hparams().n_vocab));
  model_.forward(batch, kv_, logits_.data(), n_threads_);
  cached_tokens_.insert(cached_tokens_.end(), tokens.begin(), tokens.end());
  return logits_;
}

void SequenceRunner::truncate(int64_t n_past) {
  if (n_past < 0 || n_past > this->n_past()) throw Error("truncate: n_past out of range");
  cached_tokens_.resize(static_cast<size_t>(n_past));
}

int64_t SequenceRunner::keep_common_prefix(std::span<const int32_t> tokens, int64_t max_keep) {
  const int64_t common = common_prefix_length(cached_tokens_, tokens, max_keep);
  truncate(common);
  return common;
}

}  // namespace nucleus
