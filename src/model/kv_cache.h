// Storage for attention keys and values: one pool of fixed-size blocks per layer.
//
// The forward pass reaches a sequence's cached positions only through that sequence's block
// table (position p lives in block block_table[p / block_size], slot p % block_size), so the
// same forward serves a simple contiguous cache (one sequence owning blocks 0..n-1) and the
// paged, shared cache of the batching engine. Who owns which block is not this class's concern.
//
// Elements are f32 or IEEE f16 (KvType). An f16 pool takes half the memory; the forward pass
// rounds each key/value to nearest even when storing it and attention widens it back to f32
// exactly, so an f16 cache computes what an f32 cache holding those rounded values would.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/aligned_vector.h"

namespace nucleus {

struct HParams;

enum class KvType { f32, f16 };

inline int64_t kv_type_bytes(KvType t) { return t == KvType::f16 ? 2 : 4; }
inline const char* kv_type_name(KvType t) { return t == KvType::f16 ? "f16" : "f32"; }
// "f32" or "f16"; throws Error naming `flag` and the value otherwise.
KvType parse_kv_type(const std::string& name, const std::string& flag = "--kv-type");

// Recurrent layers (Qwen3.5's gated delta-net) keep no K/V rows: each sequence has a fixed-size
// state per such layer instead — the last conv_kernel − 1 conv inputs and Hv matrices of S × S —
// in one of num_slots state slots, reached through ForwardBatch::state_slots. A slot also records
// how many tokens its state has absorbed, so a batch can only continue a state where it stopped
// (or restart it at position 0): a recurrent state cannot be rolled back, only recomputed.
struct RecurrentStateShape {
  int64_t num_slots = 0;          // 0: no recurrent state (a model without recurrent layers)
  int64_t conv_floats = 0;        // per layer and slot: [conv_kernel − 1, conv_dim]
  int64_t ssm_floats = 0;         // per layer and slot: [n_v_heads, S (value), S (key)]
  std::vector<bool> layers = {};  // [n_layer] true: a recurrent layer (it has no K/V rows)
};

struct KvCacheShape {
  int64_t n_layer = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t kv_dim = 0;       // row width: the widest layer's n_head_kv * head_dim
  KvType type = KvType::f32;
  // Optional: sliding-window layers keep their keys and values in a pool of their own
  // (num_window_blocks blocks, reached through ForwardBatch::window_block_tables), so the engine can
  // free a sequence's blocks once they fall out of every window while the full-attention layers keep
  // theirs. Empty: every layer lives in the main pool.
  std::vector<bool> window_layers = {};  // [n_layer] true: this layer's K/V live in the window pool
  int64_t num_window_blocks = 0;
  RecurrentStateShape recurrent = {};
};

// The recurrent state a model with recurrent layers needs for num_slots sequences (an empty shape
// for other models).
RecurrentStateShape recurrent_state_shape(const HParams& hp, int64_t num_slots);

class KvCache {
 public:
  // Throws Error if the pool cannot be allocated, or needs more than memory_budget bytes (0: no
  // budget) — checked before anything is allocated.
  explicit KvCache(const KvCacheShape& shape, size_t memory_budget = 0);

  const KvCacheShape& shape() const { return shape_; }
  KvType type() const { return shape_.type; }
  int64_t capacity_tokens() const { return shape_.num_blocks * shape_.block_size; }  // of the main pool
  // Whether layer's K/V live in the window pool (reached through ForwardBatch::window_block_tables).
  bool in_window_pool(int64_t layer) const { return places_[static_cast<size_t>(layer)].window; }
  bool has_window_pool() const { return shape_.num_window_blocks > 0 && !shape_.window_layers.empty(); }

  // Within a block, each KV head's rows are contiguous ("head-major"): a layer's share of a block is
  //   [n_head_kv, block_size, head_dim]  (n_head_kv · head_dim ≤ kv_dim, the block kv_dim · block_size)
  // so attention over one KV head reads block_size · head_dim consecutive values per block, not
  // head_dim out of every kv_dim-wide row (batch-32 decode, where each sequence's cached rows come
  // from DRAM, spends a fifth of its step in attention).
  // Row of KV head `head` (head_dim wide) at (layer, block, slot); f32 caches only.
  float* key(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) {
    return k_.data() + offset(layer, block, slot, head, head_dim);
  }
  float* value(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) {
    return v_.data() + offset(layer, block, slot, head, head_dim);
  }
  const float* key(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) const {
    return k_.data() + offset(layer, block, slot, head, head_dim);
  }
  const float* value(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) const {
    return v_.data() + offset(layer, block, slot, head, head_dim);
  }
  // The same as f16 values (binary16 bits); f16 caches only.
  uint16_t* key_f16(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) {
    return k16_.data() + offset(layer, block, slot, head, head_dim);
  }
  uint16_t* value_f16(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) {
    return v16_.data() + offset(layer, block, slot, head, head_dim);
  }
  const uint16_t* key_f16(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) const {
    return k16_.data() + offset(layer, block, slot, head, head_dim);
  }
  const uint16_t* value_f16(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) const {
    return v16_.data() + offset(layer, block, slot, head, head_dim);
  }
  // Elements from one block of a layer to the next (kernels/attention.h: AttentionArgs::block_stride).
  int64_t block_elements() const { return shape_.block_size * shape_.kv_dim; }
  // Copies blocks [from, from + n_blocks) of `source`'s layer into blocks [to, to + n_blocks) of
  // this cache's, keys and values. `source` (this cache, or one of the same block_size, kv_dim and
  // type) must not overlap the destination.
  void copy_blocks(const KvCache& source, int64_t layer, int64_t from, int64_t to, int64_t n_blocks);

  // Recurrent state (shape().recurrent): per recurrent layer and slot.
  bool has_recurrent_state() const { return shape_.recurrent.num_slots > 0; }
  float* conv_state(int64_t layer, int64_t slot) { return recurrent_.data() + state_offset(layer, slot); }
  float* ssm_state(int64_t layer, int64_t slot) { return conv_state(layer, slot) + shape_.recurrent.conv_floats; }
  // Tokens the slot's state has absorbed (positions 0 .. n−1); −1 after a step that failed midway.
  int64_t state_tokens(int64_t slot) const { return state_tokens_[static_cast<size_t>(slot)]; }
  void set_state_tokens(int64_t slot, int64_t n) { state_tokens_[static_cast<size_t>(slot)] = n; }
  size_t recurrent_state_bytes() const { return recurrent_.size() * sizeof(float); }
  // A copy of a slot's state (every recurrent layer's conv and ssm parts, and its token count),
  // and its return: speculative decoding puts a slot back as it was before a verification pass
  // whose drafts were not all accepted (the state cannot be rolled back token by token).
  struct StateSnapshot {
    std::vector<float> floats;  // [n_recurrent_layers, conv_floats + ssm_floats]
    int64_t tokens = -1;        // state_tokens(slot) at the copy; −1: no copy
  };
  void save_state(int64_t slot, StateSnapshot& out) const;
  void restore_state(int64_t slot, const StateSnapshot& in);

 private:
  size_t state_offset(int64_t layer, int64_t slot) const {
    const RecurrentStateShape& r = shape_.recurrent;
    return static_cast<size_t>((state_layer_[static_cast<size_t>(layer)] * r.num_slots + slot) * (r.conv_floats + r.ssm_floats));
  }
  size_t offset(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t head_dim) const {
    const LayerPlace& p = places_[static_cast<size_t>(layer)];
    return p.base + static_cast<size_t>(block * block_elements() + (head * shape_.block_size + slot) * head_dim);
  }
  struct LayerPlace {
    size_t base = 0;      // offset of the layer's first block in k_/v_ (or k16_/v16_)
    bool window = false;  // in the window pool
  };
  std::vector<LayerPlace> places_;  // [n_layer]
  KvCacheShape shape_;
  // f32: main-pool layers [n_main_layers, num_blocks, block_size · kv_dim], then window-pool layers
  // [n_window_layers, num_window_blocks, block_size · kv_dim], each block head-major (above).
  // On cache lines (core/aligned_vector.h): a head row of a multiple of 16 floats covers whole lines.
  AlignedVector<float> k_;
  AlignedVector<float> v_;
  AlignedVector<uint16_t> k16_;  // f16: the same layout
  AlignedVector<uint16_t> v16_;  // f16: the same layout
  // [n_recurrent_layers, num_slots, conv_floats + ssm_floats]
  std::vector<float> recurrent_;
  std::vector<int64_t> state_layer_;   // [n_layer] index among the recurrent layers, −1 for others
  std::vector<int64_t> state_tokens_;  // [num_slots]
};

}  // namespace nucleus
