// Panel 4's memory picture: how many requests of given lengths fit in one KV budget when the cache
// is paged (the engine's BlockPool: fixed blocks, a request takes ceil(length / block_size) of
// them, so only its last block is partly empty) versus contiguous per-request allocation at the
// maximum length (every request reserves max_model_len positions up front).
#pragma once
#include <cstdint>
#include <vector>

#include "model/hparams.h"

namespace nucleus::explain {

struct KvMemoryRequest {
  std::vector<int64_t> lengths;  // tokens per request (prompt + output), taken in order, cycling
  int64_t kv_cache_bytes = 64ll << 20;
  int64_t block_size = 16;
  int64_t max_model_len = 0;     // the contiguous reservation per request; 0 → the model's context
};

struct KvMemoryLayout {
  int64_t block_size = 0, num_blocks = 0, bytes_per_block = 0, max_model_len = 0;
  // Paged: requests admitted until the pool has no room for the next one's blocks.
  int64_t paged_requests = 0;
  int64_t paged_tokens = 0;         // their tokens
  int64_t paged_wasted_tokens = 0;  // empty positions in their last blocks
  std::vector<int32_t> block_owner; // [num_blocks] the request holding each block, -1 free
  std::vector<int32_t> block_fill;  // [num_blocks] positions used in each block
  // Contiguous: floor(capacity / max_model_len) reservations.
  int64_t contiguous_requests = 0;
  int64_t contiguous_tokens = 0;         // the tokens those requests actually hold
  int64_t contiguous_reserved_tokens = 0;
};

// Throws Error for an empty `lengths` or a length < 1 or > max_model_len. A budget below one block
// still gets one (as the engine's kv_blocks_for_bytes does).
KvMemoryLayout plan_kv_memory(const HParams& hparams, const KvMemoryRequest& request);

}  // namespace nucleus::explain
