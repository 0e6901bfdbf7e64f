#include "engine/sequence_group_runner.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace nucleus {

int64_t SequenceGroupRunner::blocks_needed(int64_t n_prompt, int64_t max_new_tokens, int64_t max_sequences,
                                           int64_t block_size) {
  // The prompt's blocks once, plus per sequence its generated blocks and the partial prompt block it
  // may copy on its first write.
  const int64_t prompt_blocks = (n_prompt + block_size - 1) / block_size;
  const int64_t generated_blocks = (max_new_tokens + block_size - 1) / block_size + 1;
  return prompt_blocks + max_sequences * generated_blocks;
}

SequenceGroupRunner::SequenceGroupRunner(Model& model, int64_t num_blocks, int64_t max_positions, int n_threads,
                                         int64_t block_size)
    : model_(model),
      kv_(KvCacheShape{model.hparams().n_layer, num_blocks, block_size, model.hparams().kv_dim()}),
      max_positions_(max_positions),
      n_threads_(n_threads),
      reference_count_(static_cast<size_t>(num_blocks), 0) {
  for (int64_t b = num_blocks; b-- > 0;) free_blocks_.push_back(static_cast<int32_t>(b));
}

SequenceGroupRunner::Sequence& SequenceGroupRunner::get(SequenceId id) {
  if (id < 0 || static_cast<size_t>(id) >= sequences_.size() || !sequences_[static_cast<size_t>(id)].live)
    throw Error("sequence group: no live sequence " + std::to_string(id));
  return sequences_[static_cast<size_t>(id)];
}
const SequenceGroupRunner::Sequence& SequenceGroupRunner::get(SequenceId id) const {
  return const_cast<SequenceGroupRunner*>(this)->get(id);
}

int64_t SequenceGroupRunner::length(SequenceId id) const { return get(id).length; }

int32_t SequenceGroupRunner::allocate_block() {
  if (free_blocks_.empty())
    throw Error("sequence group: the KV block pool (" + std::to_string(kv_.shape().num_blocks) + " blocks) is exhausted");
  const int32_t block = free_blocks_.back();
  free_blocks_.pop_back();
  reference_count_[static_cast<size_t>(block)] = 1;
  return block;
}

void SequenceGroupRunner::unreference(int32_t block) {
  if (--reference_count_[static_cast<size_t>(block)] == 0) free_blocks_.push_back(block);
}

SequenceGroupRunner::SequenceId SequenceGroupRunner::fork(SequenceId parent) {
  Sequence child = get(parent);  // copies the table; the blocks themselves are shared
  for (int32_t block : child.block_table) ++reference_count_[static_cast<size_t>(block)];
  for (size_t id = 0; id < sequences_.size(); ++id) {
    if (sequences_[id].live) continue;
    sequences_[id] = std::move(child);
    return static_cast<SequenceId>(id);
  }
  sequences_.push_back(std::move(child));
  return static_cast<SequenceId>(sequences_.size() - 1);
}

void SequenceGroupRunner::release(SequenceId id) {
  Sequence& sequence = get(id);
  for (int32_t block : sequence.block_table) unreference(block);
  sequence = Sequence{};
}

void SequenceGroupRunner::prepare_write(Sequence& sequence, int64_t position) {
  const int64_t block_size = kv_.shape().block_size;
  const auto index = static_cast<size_t>(position / block_size);
  if (index == sequence.block_table.size()) {  // the position starts a new block
    sequence.block_table.push_back(allocate_block());
    return;
  }
  const int32_t shared = sequence.block_table[index];
  if (reference_count_[static_cast<size_t>(shared)] == 1) return;
  // Copy-on-write: only this partially filled block is copied (whole: its slots from position %
  // block_size on are this sequence's to write before it attends to them).
  const int32_t own = allocate_block();
  for (int64_t layer = 0; layer < kv_.shape().n_layer; ++layer) kv_.copy_blocks(kv_, layer, shared, own, 1);
  unreference(shared);
  sequence.block_table[index] = own;
  ++num_block_copies_;
}

SequenceGroupRunner::SequenceId SequenceGroupRunner::prefill(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) throw Error("sequence group: empty prompt");
  if (static_cast<int64_t>(prompt.size()) > max_positions_)
    throw Error("context overflow: " + std::to_string(prompt.size()) + " tokens exceed the context length " +
                std::to_string(max_positions_));
  Sequence root;
  root.live = true;
  sequences_.push_back(root);
  const auto id = static_cast<SequenceId>(sequences_.size() - 1);
  Sequence& sequence = sequences_.back();
  ForwardBatch batch;
  for (size_t i = 0; i < prompt.size(); ++i) {
    prepare_write(sequence, static_cast<int64_t>(i));
    batch.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  }
  batch.block_tables.push_back(sequence.block_table);
  sequence.length = static_cast<int64_t>(prompt.size());
  logits_.resize(static_cast<size_t>(model_.hparams().n_vocab));
  model_.forward(batch, kv_, logits_.data(), n_threads_);
  return id;
}

const std::vector<float>& SequenceGroupRunner::step(std::span<const SequenceId> ids, std::span<const int32_t> tokens) {
  if (ids.size() != tokens.size()) throw Error("sequence group: one token per sequence");
  ForwardBatch batch;
  for (size_t i = 0; i < ids.size(); ++i) {
    Sequence& sequence = get(ids[i]);
    if (sequence.length + 1 > max_positions_)
      throw Error("context overflow: " + std::to_string(sequence.length + 1) + " tokens exceed the context length " +
                  std::to_string(max_positions_));
    prepare_write(sequence, sequence.length);
    batch.block_tables.push_back(sequence.block_table);
    batch.add(tokens[i], static_cast<int32_t>(sequence.length), static_cast<int32_t>(i), true);
    ++sequence.length;
  }
  logits_.resize(ids.size() * static_cast<size_t>(model_.hparams().n_vocab));
  if (!ids.empty()) model_.forward(batch, kv_, logits_.data(), n_threads_);
  return logits_;
}

}  // namespace nucleus
