// The model's whole per-step input: a ragged batch of tokens from any number of sequences.
// The model never sees requests or the scheduler; the KV layout is reached only through
// the block tables handed in here.
#pragma once
#include <cstdint>
#include <vector>

namespace nucleus {

struct ForwardBatch {
  std::vector<int32_t> tokens;     // [n_tokens] token ids
  std::vector<int32_t> positions;  // [n_tokens] position of each token in its sequence
  std::vector<int32_t> seq_index;  // [n_tokens] which block table each token uses
  std::vector<std::vector<int32_t>> block_tables;  // [n_seqs][blocks] KV block ids of each sequence
  // Only for a KvCache with a window pool (sliding-window layers): [n_seqs][blocks] block ids in that
  // pool; entries of blocks wholly before a token's window may be −1 (freed).
  std::vector<std::vector<int32_t>> window_block_tables;
  std::vector<int32_t> output_rows;  // indices into tokens whose logits are wanted, in output order
  // Only for a model with recurrent layers (Qwen3.5): [n_seqs] the KvCache state slot of each
  // sequence. A sequence's tokens must then come in order with consecutive positions, the first one
  // continuing its slot's state (position = the slot's state_tokens) or restarting it (position 0).
  std::vector<int32_t> state_slots;

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_outputs() const { return static_cast<int64_t>(output_rows.size()); }

  // Appends one token of sequence `seq` (an index into block_tables); returns its row.
  int32_t add(int32_t token, int32_t position, int32_t seq, bool want_logits) {
    const auto row = static_cast<int32_t>(tokens.size());
    tokens.push_back(token);
    positions.push_back(position);
    seq_index.push_back(seq);
    if (want_logits) output_rows.push_back(row);
    return row;
  }
};

}  // namespace nucleus
