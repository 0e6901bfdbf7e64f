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
  const float* keys = nullptr;    // this layer's key pool [num_blocks, block_size, kv_dim] + kv_head · head_dim
  const float* values = nullptr;  // this layer's value pool, same layout and offset
  const uint16_t* keys_f16 = nullptr;    // f16 cache: the key pool as binary16 bits, same layout and offset
  const uint16_t* values_f16 = nullptr;  // f16 cache: the value pool
  int64_t kv_dim;            // row stride of the pools
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

// Row of position p in a pool laid out [num_blocks, block_size, kv_dim].
template <typename T>
inline const T* attention_row(const T* pool, const AttentionArgs& a, int64_t p) {
  const int64_t block = a.block_table[p / a.block_size];
  return pool + (block * a.block_size + p % a.block_size) * a.kv_dim;
}

}  // namespace nucleus
