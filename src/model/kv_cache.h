// Storage for attention keys and values: one pool of fixed-size blocks per layer.
//
// The forward pass reaches a sequence's cached positions only through that sequence's block
// table (position p lives in block block_table[p / block_size], slot p % block_size), so the
// same forward serves a simple contiguous cache (one sequence owning blocks 0..n-1) and the
// paged, shared cache of the batching engine. Who owns which block is not this class's concern.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nucleus {

struct KvCacheShape {
  int64_t n_layer = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t kv_dim = 0;       // n_head_kv * head_dim
};

class KvCache {
 public:
  explicit KvCache(const KvCacheShape& shape);  // throws Error if the pool cannot be allocated

  const KvCacheShape& shape() const { return shape_; }
  int64_t capacity_tokens() const { return shape_.num_blocks * shape_.block_size; }

  // Row of kv_dim floats for (layer, block, slot).
  float* key(int64_t layer, int64_t block, int64_t slot) { return k_.data() + offset(layer, block, slot); }
  float* value(int64_t layer, int64_t block, int64_t slot) { return v_.data() + offset(layer, block, slot); }
  const float* key(int64_t layer, int64_t block, int64_t slot) const { return k_.data() + offset(layer, block, slot); }
  const float* value(int64_t layer, int64_t block, int64_t slot) const { return v_.data() + offset(layer, block, slot); }

 private:
  size_t offset(int64_t layer, int64_t block, int64_t slot) const {
    return static_cast<size_t>(((layer * shape_.num_blocks + block) * shape_.block_size + slot) * shape_.kv_dim);
  }
  KvCacheShape shape_;
  std::vector<float> k_;  // [n_layer, num_blocks, block_size, kv_dim]
  std::vector<float> v_;  // [n_layer, num_blocks, block_size, kv_dim]
};

}  // namespace nucleus
