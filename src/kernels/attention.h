// Causal attention of one query token for a group of query heads that share one KV head (GQA),
// reading cached keys and values through the sequence's block table:
//   out[h] = Σ_p softmax_p(cap(scale · q[h]·key[p])) · value[p]      for p in first_position..n_positions-1
// where cap(s) = softcap · tanh(s / softcap) when softcap > 0 (Gemma 2) and s otherwise, and
// first_position > 0 is a sliding window (the positions before it are masked).
// Each head's result is the same reduction (llama.cpp's decode order, kernels/ggml_order.h: over
// d for a score, over p in 64 lanes for an output) whatever the group size, so how the caller
// groups heads — and how many tokens share the step — never changes a bit of it.
//
// With an f16 cache (ops.h: attention_f16) keys_f16/values_f16 replace keys/values; each element
// is widened to f32 exactly as it is loaded, and the arithmetic is that of the same table's f32
// attention, so the result equals f32 attention over the widened rows bit for bit.
#pragma once
#include <cmath>
#include <cstdint>

namespace nucleus {

// Floats of AttentionArgs::lanes scratch per query head: 16 partly folded lanes × 64 dimensions.
constexpr int64_t kAttentionLaneFloats = 16 * 64;
// Floats of AttentionArgs::gather scratch for a group attending to up to n_positions positions:
// one lane group's value rows, 4 per 64-position chunk, 64 dimensions each.
constexpr int64_t attention_gather_floats(int64_t n_positions) { return (n_positions / 64 + 2) * 4 * 64; }

struct AttentionArgs {
  const float* q;            // [n_q, head_dim] query vectors of the group's heads (consecutive heads)
  float* out;                // [n_q, head_dim]
  int64_t n_q;               // query heads in the group
  int64_t head_dim;
  // Position p's key row is keys + block_table[p / block_size] · block_stride + (p % block_size) · row_stride:
  // the KV cache's head-major blocks (model/kv_cache.h) have row_stride = head_dim and keys at the
  // KV head's first row of block 0; a pool of whole rows [num_blocks, block_size, kv_dim] has
  // row_stride = kv_dim, block_stride = block_size · kv_dim and keys offset by kv_head · head_dim.
  const float* keys = nullptr;    // this layer's keys for the group's KV head
  const float* values = nullptr;  // its values, same layout
  const uint16_t* keys_f16 = nullptr;    // f16 cache: the keys as binary16 bits, same layout
  const uint16_t* values_f16 = nullptr;  // f16 cache: the values
  int64_t row_stride;        // elements from one position's row to the next within a block
  int64_t block_stride;      // elements from one block to the next
  const int32_t* block_table;  // [⌈n_positions / block_size⌉] block ids of the sequence
  int64_t block_size;
  int64_t n_positions;       // the token attends to positions first_position..n_positions-1 (its own included)
  int64_t first_position = 0;  // > 0: a sliding window starts here
  float scale;               // usually 1/sqrt(head_dim)
  float softcap = 0.0f;      // > 0: scores ← softcap · tanh(scores / softcap), after the scale
  float* scores;             // scratch [n_q, n_positions - first_position]
  float* lanes = nullptr;    // scratch [n_q, kAttentionLaneFloats]; allocated per call when null
  float* gather = nullptr;   // scratch [attention_gather_floats(n_positions)]; allocated per call when null
};

// Soft-capping as ggml computes it: scale by 1/cap, tanh, scale by cap.
inline float softcap_score(float s, float cap) { return std::tanh(s * (1.0f / cap)) * cap; }

// Row of position p (AttentionArgs::row_stride, block_stride).
template <typename T>
inline const T* attention_row(const T* pool, const AttentionArgs& a, int64_t p) {
  const int64_t block = a.block_table[p / a.block_size];
  return pool + block * a.block_stride + p % a.block_size * a.row_stride;
}

}  // namespace nucleus
