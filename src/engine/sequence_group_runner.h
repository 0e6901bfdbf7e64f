// Several sequences that grow from one prompt — n > 1 samples, the beams of a beam search — run
// together: one prefill for the prompt, then one ForwardBatch per step for every live sequence, over
// one pool of KV blocks.
//
// Sharing is copy-on-write: fork() gives the child the parent's block table and raises each block's
// reference count, so a prompt is prefilled once however many sequences continue it. Only a
// sequence's last, partially filled block is ever written again; a sequence about to write into a
// block that another sequence also references first copies that block's filled slots (every layer,
// K and V) into a fresh block. Full blocks are never copied. So diverging beams cost one partial
// block copy each, and their common prefix — prompt and shared generated tokens alike — is stored
// once. (Recomputing the prefix instead would cost a forward pass per fork.)
//
// Results are bit-identical to running each sequence alone (SequenceRunner): the forward pass reduces
// in an order independent of the batch (batch invariance) and reads KV only through block tables.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"

namespace nucleus {

class SequenceGroupRunner {
 public:
  using SequenceId = int32_t;

  // Blocks for a prompt of n_prompt tokens and up to max_sequences live sequences, each adding up
  // to max_new_tokens tokens (the worst case: no generated block shared).
  static int64_t blocks_needed(int64_t n_prompt, int64_t max_new_tokens, int64_t max_sequences, int64_t block_size);

  // max_positions: the longest any sequence may grow (≤ the model's context length).
  SequenceGroupRunner(Model& model, int64_t num_blocks, int64_t max_positions, int n_threads, int64_t block_size = 16);

  // Starts a sequence from `prompt` in one forward pass; logits() holds its next-token logits [n_vocab].
  SequenceId prefill(const std::vector<int32_t>& prompt);
  // A new sequence equal to `parent` (same tokens), sharing all of its blocks.
  SequenceId fork(SequenceId parent);
  // Drops a sequence; its blocks return to the pool when no other sequence references them.
  void release(SequenceId sequence);
  // Appends tokens[i] to sequences[i] (distinct ids) in one forward pass. Returns logits
  // [sequences.size(), n_vocab], row i for sequences[i]. Throws Error past max_positions or when the
  // block pool is exhausted.
  const std::vector<float>& step(std::span<const SequenceId> sequences, std::span<const int32_t> tokens);
  const std::vector<float>& logits() const { return logits_; }

  int64_t length(SequenceId sequence) const;  // tokens in the cache
  int64_t num_free_blocks() const { return static_cast<int64_t>(free_blocks_.size()); }
  int64_t num_block_copies() const { return num_block_copies_; }  // copy-on-write events so far

 private:
  struct Sequence {
    std::vector<int32_t> block_table;
    int64_t length = 0;
    bool live = false;
  };
  int32_t allocate_block();
  void unreference(int32_t block);
  // Makes the slot for position `position` of `sequence` writable: a fresh block at a block start,
  // a private copy when the block is shared.
  void prepare_write(Sequence& sequence, int64_t position);
  Sequence& get(SequenceId id);
  const Sequence& get(SequenceId id) const;

  Model& model_;
  KvCache kv_;
  int64_t max_positions_;
  int n_threads_;
  std::vector<int32_t> reference_count_;  // [num_blocks]
  std::vector<int32_t> free_blocks_;      // a stack: the lowest ids are handed out first
  std::vector<Sequence> sequences_;       // indexed by SequenceId; released ones are reused
  std::vector<float> logits_;             // [n_outputs, n_vocab]
  int64_t num_block_copies_ = 0;
};

}  // namespace nucleus
