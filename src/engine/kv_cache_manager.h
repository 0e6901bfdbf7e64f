// Which KV blocks each request owns: allocation as requests grow, prefix-cache hits when they
// start, registration of full blocks, and release when they finish or are preempted.
#pragma once
#include <cstdint>

#include "engine/block_pool.h"
#include "engine/request.h"

namespace nucleus {

class KvCacheManager {
 public:
  KvCacheManager(BlockPool& pool, bool enable_prefix_caching) : pool_(pool), prefix_caching_(enable_prefix_caching) {}

  // For a request holding no blocks: takes the longest run of cached full blocks matching its
  // tokens (never the block of its last token, which must be computed to produce logits), puts
  // them in its block table and returns how many tokens they cover.
  int64_t acquire_cached_prefix(Request& request);
  // Ensures the block table covers num_computed_tokens + num_new_tokens positions. All or nothing.
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

 private:
  BlockPool& pool_;
  bool prefix_caching_;
};

}  // namespace nucleus
