#include "engine/kv_cache_manager.h"

#include <algorithm>
#include <span>

namespace nucleus {

int64_t KvCacheManager::first_window_block(int64_t first_new) const {
  return std::max<int64_t>(0, first_new - window_ + 1) / block_size();
}

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
  if (window_pool_) {
    // The longest run n ≤ the hits whose window-pool blocks [first_window_block(n·bs), n) are all
    // cached too; the full-attention blocks past it go back.
    auto n = static_cast<int64_t>(request.block_table.size());
    for (; n > 0; --n) {
      bool all = true;
      for (int64_t b = first_window_block(n * bs); b < n && all; ++b) {
        std::span<const int32_t> tokens(request.tokens.data() + b * bs, static_cast<size_t>(bs));
        all = window_pool_->lookup(request.block_hashes[static_cast<size_t>(b)], tokens) >= 0;
      }
      if (all) break;
    }
    while (static_cast<int64_t>(request.block_table.size()) > n) {
      pool_.release(request.block_table.back());
      request.block_table.pop_back();
      request.block_hashes.pop_back();
    }
    request.window_block_table.assign(static_cast<size_t>(n), -1);
    for (int64_t b = first_window_block(n * bs); b < n; ++b) {
      std::span<const int32_t> tokens(request.tokens.data() + b * bs, static_cast<size_t>(bs));
      const int32_t block = window_pool_->lookup(request.block_hashes[static_cast<size_t>(b)], tokens);
      window_pool_->retain(block);
      request.window_block_table[static_cast<size_t>(b)] = block;
    }
  }
  return static_cast<int64_t>(request.block_table.size()) * bs;
}

bool KvCacheManager::allocate_slots(Request& request, int64_t num_new_tokens) {
  const int64_t bs = block_size();
  const int64_t needed = (request.num_computed_tokens + num_new_tokens + bs - 1) / bs;
  const int64_t missing = needed - static_cast<int64_t>(request.block_table.size());
  if (!window_pool_) return missing <= 0 || pool_.allocate(static_cast<int32_t>(missing), request.block_table);
  // Blocks before the window of the first new token are never read again: give them back first.
  std::vector<int32_t>& window_table = request.window_block_table;
  const int64_t first_kept = first_window_block(request.num_computed_tokens);
  for (int64_t b = 0; b < std::min<int64_t>(first_kept, static_cast<int64_t>(window_table.size())); ++b) {
    int32_t& block = window_table[static_cast<size_t>(b)];
    if (block >= 0) window_pool_->release(block);
    block = -1;
  }
  const int64_t window_missing = needed - static_cast<int64_t>(window_table.size());
  // Blocks of the window pool only for positions a window can still reach.
  const int64_t window_allocated = std::max<int64_t>(0, needed - std::max<int64_t>(first_kept, static_cast<int64_t>(window_table.size())));
  if (missing > pool_.num_free_blocks() || window_allocated > window_pool_->num_free_blocks()) return false;
  if (missing > 0) pool_.allocate(static_cast<int32_t>(missing), request.block_table);
  if (window_missing > 0) {
    std::vector<int32_t> fresh;
    window_pool_->allocate(static_cast<int32_t>(window_allocated), fresh);
    size_t next = 0;
    while (static_cast<int64_t>(window_table.size()) < needed) {
      const int64_t b = static_cast<int64_t>(window_table.size());
      window_table.push_back(b < first_kept ? -1 : fresh[next++]);
    }
  }
  return true;
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
    if (window_pool_ && request.window_block_table[static_cast<size_t>(b)] >= 0)
      window_pool_->register_full_block(request.window_block_table[static_cast<size_t>(b)], hash, tokens);
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
  while (request.window_block_table.size() > keep) {
    if (request.window_block_table.back() >= 0) window_pool_->release(request.window_block_table.back());
    request.window_block_table.pop_back();
  }
  if (request.block_hashes.size() > keep) request.block_hashes.resize(keep);
}

void KvCacheManager::free(Request& request) {
  for (auto it = request.block_table.rbegin(); it != request.block_table.rend(); ++it) pool_.release(*it);
  for (auto it = request.window_block_table.rbegin(); it != request.window_block_table.rend(); ++it)
    if (*it >= 0) window_pool_->release(*it);
  request.block_table.clear();
  request.window_block_table.clear();
  request.block_hashes.clear();
}

}  // namespace nucleus
