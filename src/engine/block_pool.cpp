#include "engine/block_pool.h"

#include <xxhash.h>

#include <algorithm>

#include "core/error.h"

namespace nucleus {

uint64_t hash_block_tokens(uint64_t parent_hash, std::span<const int32_t> tokens) {
  return XXH64(tokens.data(), tokens.size_bytes(), parent_hash);
}

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size) {
  if (num_blocks <= 0 || block_size <= 0) throw Error("KV block pool needs at least one block of at least one token");
  ref_counts_.assign(static_cast<size_t>(num_blocks), 0);
  prev_.assign(static_cast<size_t>(num_blocks), -1);
  next_.assign(static_cast<size_t>(num_blocks), -1);
  in_free_list_.assign(static_cast<size_t>(num_blocks), 0);
  block_hashes_.resize(static_cast<size_t>(num_blocks));
  block_tokens_.assign(static_cast<size_t>(num_blocks) * static_cast<size_t>(block_size), -1);
  for (int32_t b = 0; b < num_blocks; ++b) push_tail(b);
}

void BlockPool::unlink(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  if (!in_free_list_[i]) return;
  if (prev_[i] >= 0) next_[static_cast<size_t>(prev_[i])] = next_[i];
  else head_ = next_[i];
  if (next_[i] >= 0) prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else tail_ = prev_[i];
  prev_[i] = next_[i] = -1;
  in_free_list_[i] = 0;
  --num_free_;
}

void BlockPool::push_tail(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  prev_[i] = tail_;
  next_[i] = -1;
  if (tail_ >= 0) next_[static_cast<size_t>(tail_)] = b;
  else head_ = b;
  tail_ = b;
  in_free_list_[i] = 1;
  ++num_free_;
}

void BlockPool::evict(int32_t b) {
  MaybeHash& h = block_hashes_[static_cast<size_t>(b)];
  if (!h.has_value) return;
  auto it = cached_.find(h.value);
  if (it != cached_.end() && it->second == b) cached_.erase(it);
  h.has_value = false;
  ++counters_.evictions;
}

bool BlockPool::allocate(int32_t n, std::vector<int32_t>& out) {
  if (n > num_free_) return false;
  for (int32_t k = 0; k < n; ++k) {
    const int32_t b = head_;
    unlink(b);
    evict(b);
    ref_counts_[static_cast<size_t>(b)] = 1;
    out.push_back(b);
  }
  return true;
}

void BlockPool::retain(int32_t b) {
  if (ref_counts_[static_cast<size_t>(b)]++ == 0) unlink(b);
}

void BlockPool::release(int32_t b) {
  int32_t& rc = ref_counts_[static_cast<size_t>(b)];
  if (rc <= 0) throw Error("internal: KV block released more often than taken");
  if (--rc == 0) push_tail(b);
}

int32_t BlockPool::lookup(uint64_t hash, std::span<const int32_t> tokens) {
  ++counters_.prefix_queries;
  auto it = cached_.find(hash);
  if (it == cached_.end()) return -1;
  const int32_t b = it->second;
  const int32_t* stored = block_tokens_.data() + static_cast<size_t>(b) * static_cast<size_t>(block_size_);
  if (!std::equal(tokens.begin(), tokens.end(), stored)) return -1;  // a collision, not a hit
  ++counters_.prefix_hits;
  return b;
}

void BlockPool::register_full_block(int32_t b, uint64_t hash, std::span<const int32_t> tokens) {
  if (block_hashes_[static_cast<size_t>(b)].has_value || cached_.count(hash)) return;
  block_hashes_[static_cast<size_t>(b)] = {true, hash};
  cached_[hash] = b;
  std::copy(tokens.begin(), tokens.end(), block_tokens_.begin() + static_cast<std::ptrdiff_t>(b) * block_size_);
}

void BlockPool::clear_cache() {
  cached_.clear();
  for (MaybeHash& h : block_hashes_) h.has_value = false;
}

}  // namespace nucleus
