#include "engine/kv_cache_manager.h"

#include <algorithm>
#include <span>

namespace nucleus {

int64_t KvCacheManager::acquire_cached_prefix(Request& request) {
  if (!prefix_caching_ || !request.block_table.empty()) return 0;
  const int64_t bs = block_size();
  const int64_t max_blocks = (request.num_tokens() - 1) / bs;  // leave the last token to compute
  uint64_t parent = 0;
  for (int64_t b = 0; b < max_blocks; ++b) {
    std::span<const int32_t> tokens(request.tokens.data() + b * bs, static_cast<size_t>(bs));
    const uint64_t hash = hash_block_tokens(parent, tokens);
    const int32_t block = pool_.lookup(hash, tokens);
    if (block < 0) break;
    pool_.retain(block);
    request.block_table.push_back(block);
    request.block_hashes.push_back(hash);
    parent = hash;
  }
  return static_cast<int64_t>(request.block_table.size()) * bs;
}

bool KvCacheManager::allocate_slots(Request& request, int64_t num_new_tokens) {
  const int64_t bs = block_size();
  const int64_t needed = (request.num_computed_tokens + num_new_tokens + bs - 1) / bs;
  const int64_t missing = needed - static_cast<int64_t>(request.block_table.size());
  if (missing <= 0) return true;
  return pool_.allocate(static_cast<int32_t>(missing), request.block_table);
}

void KvCacheManager::cache_full_blocks(Request& request) {
  if (!prefix_caching_) return;
  const int64_t bs = block_size();
  // Drafts computed this step are not tokens yet: only blocks of known tokens are registered.
  const int64_t full = std::min(request.num_computed_tokens, request.num_tokens()) / bs;
  for (int64_t b = static_cast<int64_t>(request.block_hashes.size()); b < full; ++b) {
    std::span<const int32_t> tokens(request.tokens.data() + b * bs, static_cast<size_t>(bs));
    const uint64_t parent = b == 0 ? 0 : request.block_hashes[static_cast<size_t>(b - 1)];
    const uint64_t hash = hash_block_tokens(parent, tokens);
    pool_.register_full_block(request.block_table[static_cast<size_t>(b)], hash, tokens);
    request.block_hashes.push_back(hash);
  }
}

void KvCacheManager::release_unused_blocks(Request& request) {
  const int64_t bs = block_size();
  const auto keep = static_cast<size_t>((request.num_computed_tokens + bs - 1) / bs);
  while (request.block_table.size() > keep) {
    pool_.release(request.block_table.back());
    request.block_table.pop_back();
  }
  if (request.block_hashes.size() > keep) request.block_hashes.resize(keep);
}

void KvCacheManager::free(Request& request) {
  for (auto it = request.block_table.rbegin(); it != request.block_table.rend(); ++it) pool_.release(*it);
  request.block_table.clear();
  request.block_hashes.clear();
}

}  // namespace nucleus
