// Which KV blocks each request owns: allocation as requests grow, prefix-cache hits when they
// start, registration of full blocks, and release when they finish or are preempted.
//
// With a window pool (models with sliding-window layers, vLLM's sliding-window manager), a request
// also holds blocks there for those layers, and gives back each one as soon as it lies wholly
// before the window of every token still to come: a sequence then holds about window / block_size
// window-pool blocks however long it grows, while the full-attention layers keep all of theirs.
#pragma once
#include <cstdint>

#include "engine/block_pool.h"
#include "engine/request.h"

namespace nucleus {

class KvCacheManager {
 public:
  KvCacheManager(BlockPool& pool, bool enable_prefix_caching) : pool_(pool), prefix_caching_(enable_prefix_caching) {}
  // window_pool (may be null) holds the layers whose attention sees at most `window` positions.
  KvCacheManager(BlockPool& pool, bool enable_prefix_caching, BlockPool* window_pool, int64_t window)
      : pool_(pool), prefix_caching_(enable_prefix_caching), window_pool_(window_pool), window_(window) {}

  // For a request holding no blocks: takes the longest run of cached full blocks matching its
  // tokens (never the block of its last token, which must be computed to produce logits), puts
  // them in its block table and returns how many tokens they cover. With a window pool the run
  // also needs the window-pool blocks of the window before its end.
  int64_t acquire_cached_prefix(Request& request);
  // Ensures the block tables cover num_computed_tokens + num_new_tokens positions (and gives back
  // window-pool blocks before the new tokens' windows). All or nothing.
  bool allocate_slots(Request& request, int64_t num_new_tokens);
  // Registers the request's newly completed full blocks in the prefix cache.
  void cache_full_blocks(Request& request);
  // Releases the blocks past num_computed_tokens (a speculative step's rejected drafts).
  void release_unused_blocks(Request& request);
  // Releases every block (last block first, so a prefix's head is evicted last).
  void free(Request& request);
  int32_t block_size() const { return pool_.block_size(); }
  BlockPool& pool() { return pool_; }
  bool prefix_caching() const { return prefix_caching_; }
  bool has_window_pool() const { return window_pool_ != nullptr; }

 private:
  // First block any token from position `first_new` on can still attend to in the window pool.
  int64_t first_window_block(int64_t first_new) const;
  BlockPool& pool_;
  bool prefix_caching_;
  BlockPool* window_pool_ = nullptr;
  int64_t window_ = 0;
};

}  // namespace nucleus
