// Tiny llama2.c checkpoints and tokenizer files for the llama2c_* fuzz targets: one reader is
// fuzzed while the other file is a valid one of the matching vocabulary size.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace nucleus::fuzz {

inline void append_i32(std::vector<uint8_t>& out, int32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}
inline void append_f32(std::vector<uint8_t>& out, float v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}

// A tokenizer file of `vocab_size` entries: <unk>, <s>, </s>, byte tokens, then short words.
inline std::vector<uint8_t> llama2c_tokenizer_file(int32_t vocab_size) {
  std::vector<uint8_t> out;
  append_i32(out, 8);
  for (int32_t i = 0; i < vocab_size; ++i) {
    std::string piece;
    if (i == 0) piece = "<unk>";
    else if (i == 1) piece = "\n<s>\n";
    else if (i == 2) piece = "\n</s>\n";
    else if (i < 3 + 16) {
      static const char* hex = "0123456789ABCDEF";
      piece = std::string("<0x") + hex[(i - 3) >> 4] + hex[(i - 3) & 15] + ">";
    } else {
      piece = (i % 2 ? " " : "") + std::string(1, static_cast<char>('a' + i % 26)) + std::string(i % 3, 'e');
    }
    append_f32(out, -static_cast<float>(i));
    append_i32(out, static_cast<int32_t>(piece.size()));
    out.insert(out.end(), piece.begin(), piece.end());
  }
  return out;
}

// A checkpoint of dim 4, hidden 8, one layer, 2 heads (1 KV head when gqa), seq_len 8, with
// shared or separate classifier; weights are small deterministic values.
inline std::vector<uint8_t> llama2c_checkpoint_file(int32_t vocab_size, bool separate_classifier, bool gqa) {
  const int32_t dim = 4, hidden = 8, layers = 1, heads = 2, kv_heads = gqa ? 1 : 2, seq_len = 8;
  std::vector<uint8_t> out;
  for (int32_t v : {dim, hidden, layers, heads, kv_heads, separate_classifier ? -vocab_size : vocab_size, seq_len})
    append_i32(out, v);
  const int64_t head_size = dim / heads, kv_dim = head_size * kv_heads;
  const int64_t count = vocab_size * dim + layers * (2 * dim + 2 * dim * dim + 2 * kv_dim * dim + 3 * hidden * dim) +
                        dim + seq_len * head_size + (separate_classifier ? vocab_size * dim : 0);
  for (int64_t i = 0; i < count; ++i) append_f32(out, static_cast<float>((i * 37) % 17) / 16.0f - 0.5f);
  return out;
}

}  // namespace nucleus::fuzz
