#include "explain/kv_memory.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "engine/block_pool.h"
#include "engine/llm_engine.h"

namespace nucleus::explain {

KvMemoryLayout plan_kv_memory(const HParams& hparams, const KvMemoryRequest& request) {
  KvMemoryLayout out;
  out.block_size = request.block_size;
  out.max_model_len = request.max_model_len > 0 ? request.max_model_len : hparams.n_ctx_train;
  if (request.lengths.empty()) throw Error("kv memory: no request lengths");
  for (int64_t length : request.lengths)
    if (length < 1 || length > out.max_model_len)
      throw Error("kv memory: request lengths must be between 1 and " + std::to_string(out.max_model_len) + ", got " +
                  std::to_string(length));
  // The engine's own sizing: blocks of keys and values for every layer (f32) in the budget.
  out.num_blocks = kv_blocks_for_bytes(hparams, request.block_size, request.kv_cache_bytes, KvType::f32);
  out.bytes_per_block = 2 * hparams.n_layer * request.block_size * hparams.kv_dim() * kv_type_bytes(KvType::f32);  // K and V, every layer

  BlockPool pool(static_cast<int32_t>(out.num_blocks), static_cast<int32_t>(request.block_size));
  out.block_owner.assign(static_cast<size_t>(out.num_blocks), -1);
  out.block_fill.assign(static_cast<size_t>(out.num_blocks), 0);
  std::vector<int32_t> blocks;
  for (size_t r = 0;; ++r) {
    const int64_t length = request.lengths[r % request.lengths.size()];
    blocks.clear();
    if (!pool.allocate(static_cast<int32_t>((length + request.block_size - 1) / request.block_size), blocks)) break;
    for (size_t b = 0; b < blocks.size(); ++b) {
      out.block_owner[static_cast<size_t>(blocks[b])] = static_cast<int32_t>(r);
      const int64_t used = std::min<int64_t>(request.block_size, length - static_cast<int64_t>(b) * request.block_size);
      out.block_fill[static_cast<size_t>(blocks[b])] = static_cast<int32_t>(used);
    }
    ++out.paged_requests;
    out.paged_tokens += length;
    out.paged_wasted_tokens += static_cast<int64_t>(blocks.size()) * request.block_size - length;
  }
  out.contiguous_requests = out.num_blocks * request.block_size / out.max_model_len;
  out.contiguous_reserved_tokens = out.contiguous_requests * out.max_model_len;
  for (int64_t r = 0; r < out.contiguous_requests; ++r)
    out.contiguous_tokens += request.lengths[static_cast<size_t>(r) % request.lengths.size()];
  return out;
}

}  // namespace nucleus::explain
