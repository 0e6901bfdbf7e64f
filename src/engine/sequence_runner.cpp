#include "engine/sequence_runner.h"

#include <numeric>
#include <string>

#include "core/error.h"

namespace nucleus {

namespace {
constexpr int64_t kBlockSize = 16;
KvCacheShape contiguous_shape(const HParams& hp, int64_t n_ctx) {
  return KvCacheShape{hp.n_layer, (n_ctx + kBlockSize - 1) / kBlockSize, kBlockSize, hp.kv_dim()};
}
}  // namespace

SequenceRunner::SequenceRunner(Model& model, int64_t n_ctx, int n_threads)
    : model_(model), n_ctx_(n_ctx), n_threads_(n_threads), kv_(contiguous_shape(model.hparams(), n_ctx)) {
  block_table_.resize(static_cast<size_t>(kv_.shape().num_blocks));
  std::iota(block_table_.begin(), block_table_.end(), 0);
}

const std::vector<float>& SequenceRunner::feed(const std::vector<int32_t>& tokens, bool all_logits) {
  if (tokens.empty()) throw Error("nothing to feed: empty token list");
  if (n_past_ + static_cast<int64_t>(tokens.size()) > n_ctx_)
    throw Error("context overflow: " + std::to_string(n_past_ + static_cast<int64_t>(tokens.size())) +
                " tokens exceed the context length " + std::to_string(n_ctx_));
  ForwardBatch batch;
  batch.block_tables.push_back(block_table_);
  for (size_t i = 0; i < tokens.size(); ++i)
    batch.add(tokens[i], static_cast<int32_t>(n_past_ + static_cast<int64_t>(i)), 0, all_logits || i + 1 == tokens.size());
  const int64_t n_vocab = model_.hparams().n_vocab;
  logits_.resize(static_cast<size_t>(batch.n_outputs() * n_vocab));
  model_.forward(batch, kv_, logits_.data(), n_threads_);
  n_past_ += static_cast<int64_t>(tokens.size());
  return logits_;
}

}  // namespace nucleus
