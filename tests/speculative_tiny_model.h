// Tiny random-weight llama models built in memory for the speculative-decoding tests: a vocabulary
// small enough (≤ 64 tokens) that the joint distribution of a few tokens can be enumerated.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "io/gguf.h"
#include "model/model.h"

namespace nucleus::test {

struct TinyModelSpec {
  int64_t n_vocab = 32, dim = 16, layers = 2, heads = 2, kv_heads = 1, ffn = 32;
  uint64_t seed = 1;
  float output_scale = 2.0f;  // logits' spread (≈ their standard deviation)
  // A perturbed copy: weights = base(seed) + noise · other(noise_seed) (a "good" draft of the base).
  float noise = 0.0f;
  uint64_t noise_seed = 0;
  std::string first_token_text;  // overrides token 3's text (a vocabulary mismatch)
};

inline std::vector<float> tiny_values(const std::string& name, uint64_t seed, int64_t n, float scale) {
  uint64_t key = splitmix64(seed);
  for (unsigned char c : name) key = splitmix64(key ^ c);
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[static_cast<size_t>(i)] =
        static_cast<float>((2.0 * (static_cast<double>(splitmix64(key + static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53) - 1.0) * scale);
  return values;
}

inline std::unique_ptr<Model> make_tiny_model(const TinyModelSpec& spec) {
  GgufWriter writer;
  writer.set("general.architecture", MetaValue::string("llama"));
  writer.set("llama.context_length", MetaValue::u32(256));
  writer.set("llama.embedding_length", MetaValue::u32(static_cast<uint32_t>(spec.dim)));
  writer.set("llama.block_count", MetaValue::u32(static_cast<uint32_t>(spec.layers)));
  writer.set("llama.feed_forward_length", MetaValue::u32(static_cast<uint32_t>(spec.ffn)));
  writer.set("llama.attention.head_count", MetaValue::u32(static_cast<uint32_t>(spec.heads)));
  writer.set("llama.attention.head_count_kv", MetaValue::u32(static_cast<uint32_t>(spec.kv_heads)));
  writer.set("llama.attention.layer_norm_rms_epsilon", MetaValue::f32(1e-5f));
  writer.set("llama.rope.dimension_count", MetaValue::u32(static_cast<uint32_t>(spec.dim / spec.heads)));
  // A minimal SentencePiece ('llama') vocabulary: <unk>, <s>, </s>, then single letters.
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0.0f, 0.0f, 0.0f};
  std::vector<int32_t> types = {2, 3, 3};
  for (int64_t i = 3; i < spec.n_vocab; ++i) {
    tokens.push_back(i == 3 && !spec.first_token_text.empty() ? spec.first_token_text
                                                                : std::string(1, static_cast<char>('!' + i)));
    scores.push_back(-static_cast<float>(i));
    types.push_back(1);
  }
  writer.set("tokenizer.ggml.model", MetaValue::string("llama"));
  writer.set("tokenizer.ggml.tokens", MetaValue::string_array(tokens));
  writer.set("tokenizer.ggml.scores", MetaValue::f32_array(scores));
  writer.set("tokenizer.ggml.token_type", MetaValue::i32_array(types));
  writer.set("tokenizer.ggml.bos_token_id", MetaValue::u32(1));
  writer.set("tokenizer.ggml.eos_token_id", MetaValue::u32(2));

  std::vector<std::vector<float>> buffers;
  buffers.reserve(64);
  auto add = [&](const std::string& name, int64_t cols, int64_t rows, float scale, bool constant_one) {
    std::vector<float> data;
    if (constant_one) {
      data.assign(static_cast<size_t>(cols * rows), 1.0f);
    } else {
      data = tiny_values(name, spec.seed, cols * rows, scale);
      if (spec.noise != 0.0f) {
        const std::vector<float> other = tiny_values(name, spec.noise_seed, cols * rows, scale);
        for (size_t i = 0; i < data.size(); ++i) data[i] += spec.noise * other[i];
      }
    }
    buffers.push_back(std::move(data));
    std::vector<int64_t> ne = rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows};
    writer.add_tensor(name, GgmlType::F32, ne, buffers.back().data(), buffers.back().size() * sizeof(float));
  };
  const int64_t kv_dim = spec.dim / spec.heads * spec.kv_heads;
  auto scale_for = [](int64_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); };
  add("token_embd.weight", spec.dim, spec.n_vocab, 1.0f, false);
  add("output_norm.weight", spec.dim, 1, 0.0f, true);
  add("output.weight", spec.dim, spec.n_vocab, scale_for(spec.dim) * spec.output_scale, false);
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", spec.dim, 1, 0.0f, true);
    add(b + "attn_q.weight", spec.dim, spec.dim, scale_for(spec.dim), false);
    add(b + "attn_k.weight", spec.dim, kv_dim, scale_for(spec.dim), false);
    add(b + "attn_v.weight", spec.dim, kv_dim, scale_for(spec.dim), false);
    add(b + "attn_output.weight", spec.dim, spec.dim, scale_for(spec.dim), false);
    add(b + "ffn_norm.weight", spec.dim, 1, 0.0f, true);
    add(b + "ffn_gate.weight", spec.dim, spec.ffn, scale_for(spec.dim), false);
    add(b + "ffn_up.weight", spec.dim, spec.ffn, scale_for(spec.dim), false);
    add(b + "ffn_down.weight", spec.ffn, spec.dim, scale_for(spec.ffn), false);
  }
  return Model::load(GgufFile::from_bytes(writer.to_bytes(), "tiny-" + std::to_string(spec.seed) + ".gguf"));
}

}  // namespace nucleus::test
