// The pool of KV-cache blocks shared by every sequence (vLLM's block pool).
//
// Each block holds block_size consecutive positions of one sequence's keys and values (the
// storage itself is model/kv_cache.h; this class only tracks ownership). A block is in use while
// its ref count is positive; at zero it joins the free list. The free list is LRU-ordered:
// allocation takes from its head (least recently freed), freeing appends to its tail.
//
// Prefix caching: a full block can be registered under a chained hash of (parent block's hash,
// its token ids). A freed block keeps its contents and its registration until allocation evicts
// it, so a later request with the same prefix can take it back (ref count 0 → 1) instead of
// recomputing it. A lookup verifies the token ids, so a hash collision is never a wrong hit.
// Only full blocks are shared, which keeps block tables append-only.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace nucleus {

struct BlockPoolCounters {
  int64_t prefix_queries = 0;  // full blocks looked up
  int64_t prefix_hits = 0;     // of which found
  int64_t evictions = 0;       // cached blocks reused for new contents
};

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, int32_t block_size);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t num_free_blocks() const { return num_free_; }  // ref count 0, cached or not
  int32_t num_used_blocks() const { return num_blocks_ - num_free_; }
  int32_t ref_count(int32_t block) const { return ref_counts_[static_cast<size_t>(block)]; }

  // Takes n blocks (ref count 1), evicting cached ones in LRU order. All or nothing: returns false
  // and takes none when fewer than n are free.
  bool allocate(int32_t n, std::vector<int32_t>& out);
  // Adds a reference (a prefix hit or a shared block); a free block leaves the free list.
  void retain(int32_t block);
  // Drops a reference; at zero the block goes to the free-list tail (its cache entry stays).
  void release(int32_t block);

  // The cached block holding exactly `tokens` under `hash`, or -1. Counts a query (and a hit).
  int32_t lookup(uint64_t hash, std::span<const int32_t> tokens);
  // Registers a full, computed block under `hash` (no-op if that hash is already cached).
  void register_full_block(int32_t block, uint64_t hash, std::span<const int32_t> tokens);
  bool is_cached(int32_t block) const { return block_hashes_[static_cast<size_t>(block)].has_value; }
  // Drops every cache entry (blocks stay allocated or free as they are).
  void clear_cache();

  const BlockPoolCounters& counters() const { return counters_; }

 private:
  struct MaybeHash {
    bool has_value = false;
    uint64_t value = 0;
  };
  void unlink(int32_t block);       // remove from the free list
  void push_tail(int32_t block);    // append to the free list
  void evict(int32_t block);        // forget its cache entry

  int32_t num_blocks_, block_size_;
  std::vector<int32_t> ref_counts_;          // [num_blocks]
  std::vector<int32_t> prev_, next_;         // [num_blocks] free-list links, -1 at the ends
  std::vector<char> in_free_list_;           // [num_blocks]
  int32_t head_ = -1, tail_ = -1, num_free_ = 0;
  std::vector<MaybeHash> block_hashes_;      // [num_blocks]
  std::vector<int32_t> block_tokens_;        // [num_blocks, block_size] tokens of cached blocks
  std::unordered_map<uint64_t, int32_t> cached_;  // hash → block
  BlockPoolCounters counters_;
};

// Chained prefix hash of one full block: depends on every token before it.
uint64_t hash_block_tokens(uint64_t parent_hash, std::span<const int32_t> tokens);

}  // namespace nucleus
