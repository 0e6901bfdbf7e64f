#include "io/llama2c.h"

#include <cstring>

#include "core/error.h"
#include "core/mapped_file.h"

namespace nucleus {

namespace {

struct Llama2cHeader {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

struct TokenizerEntries {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

// llama2.c stores "\n<s>\n" / "\n</s>\n" for BOS/EOS and plain spaces where SentencePiece
// (and GGUF) use '▁'. Token types follow llama.cpp: 2 unknown, 3 control, 6 byte, 1 normal.
TokenizerEntries read_tokenizer(const std::string& path, int32_t vocab_size) {
  MappedFile file(path);
  const uint8_t* p = file.data();
  size_t pos = 0, size = file.size();
  auto read_bytes = [&](void* out, size_t n, const char* what) {
    if (n > size - pos) throw Error(path + ": truncated tokenizer file (" + what + ")");
    std::memcpy(out, p + pos, n);
    pos += n;
  };
  int32_t max_token_length = 0;
  read_bytes(&max_token_length, 4, "header");
  if (max_token_length <= 0 || max_token_length > 4096) throw Error(path + ": not a llama2.c tokenizer (bad max token length)");
  TokenizerEntries entries;
  for (int32_t i = 0; i < vocab_size; ++i) {
    float score;
    int32_t length;
    read_bytes(&score, 4, "score");
    read_bytes(&length, 4, "length");
    if (length < 0 || length > max_token_length) throw Error(path + ": token " + std::to_string(i) + " has invalid length");
    std::string piece(static_cast<size_t>(length), '\0');
    read_bytes(piece.data(), piece.size(), "token bytes");
    int32_t type = 1;
    if (i == 0) type = 2;
    else if (piece == "\n<s>\n" || piece == "\n</s>\n") {
      piece = piece.substr(1, piece.size() - 2);
      type = 3;
    } else if (piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>') {
      type = 6;
    }
    std::string converted;
    for (char ch : piece) {
      if (ch == ' ') converted += "\xe2\x96\x81";  // '▁'
      else converted += ch;
    }
    entries.pieces.push_back(std::move(converted));
    entries.scores.push_back(score);
    entries.types.push_back(type);
  }
  if (pos != size) throw Error(path + ": tokenizer has more entries than the checkpoint's vocabulary");
  return entries;
}

}  // namespace

std::vector<uint8_t> convert_llama2c_to_gguf(const std::string& checkpoint_path, const std::string& tokenizer_path) {
  MappedFile ckpt(checkpoint_path);
  Llama2cHeader h{};
  if (ckpt.size() < sizeof h) throw Error(checkpoint_path + ": truncated llama2.c checkpoint (header)");
  std::memcpy(&h, ckpt.data(), sizeof h);
  const bool shared_classifier = h.vocab_size > 0;
  const int64_t vocab = shared_classifier ? h.vocab_size : -static_cast<int64_t>(h.vocab_size);
  auto positive = [](int32_t v) { return v > 0 && v < (1 << 24); };
  if (!positive(h.dim) || !positive(h.hidden_dim) || !positive(h.n_layers) || !positive(h.n_heads) ||
      !positive(h.n_kv_heads) || vocab <= 0 || vocab >= (1 << 24) || !positive(h.seq_len) || h.dim % h.n_heads != 0 ||
      h.n_heads % h.n_kv_heads != 0)
    throw Error(checkpoint_path + ": not a llama2.c checkpoint (invalid header)");
  const int64_t dim = h.dim, hidden = h.hidden_dim, L = h.n_layers;
  const int64_t head_size = dim / h.n_heads, kv_dim = head_size * h.n_kv_heads;

  const float* base = reinterpret_cast<const float*>(ckpt.data() + sizeof h);
  const size_t available = (ckpt.size() - sizeof h) / sizeof(float);
  size_t cursor = 0;
  auto take = [&](int64_t count) -> const float* {
    if (static_cast<size_t>(count) > available - cursor) throw Error(checkpoint_path + ": truncated llama2.c checkpoint (weights)");
    const float* p = base + cursor;
    cursor += static_cast<size_t>(count);
    return p;
  };
  const float* token_embedding = take(vocab * dim);
  const float* rms_att = take(L * dim);
  const float* wq = take(L * dim * dim);
  const float* wk = take(L * kv_dim * dim);
  const float* wv = take(L * kv_dim * dim);
  const float* wo = take(L * dim * dim);
  const float* rms_ffn = take(L * dim);
  const float* w1 = take(L * hidden * dim);
  const float* w2 = take(L * dim * hidden);
  const float* w3 = take(L * hidden * dim);
  const float* rms_final = take(dim);
  take(static_cast<int64_t>(h.seq_len) * head_size);  // freq_cis_real and _imag: RoPE tables we recompute
  const float* wcls = shared_classifier ? token_embedding : take(vocab * dim);
  if (cursor != available) throw Error(checkpoint_path + ": llama2.c checkpoint has trailing bytes (header does not match the weights)");

  TokenizerEntries tok = read_tokenizer(tokenizer_path, static_cast<int32_t>(vocab));

  GgufWriter w;
  w.set("tokenizer.ggml.tokens", MetaValue::string_array(tok.pieces));
  w.set("tokenizer.ggml.scores", MetaValue::f32_array(tok.scores));
  w.set("tokenizer.ggml.token_type", MetaValue::i32_array(tok.types));
  w.set("tokenizer.ggml.model", MetaValue::string("llama"));
  w.set("general.architecture", MetaValue::string("llama"));
  w.set("general.name", MetaValue::string("llama"));
  w.set("tokenizer.ggml.unknown_token_id", MetaValue::u32(0));
  w.set("tokenizer.ggml.bos_token_id", MetaValue::u32(1));
  w.set("tokenizer.ggml.eos_token_id", MetaValue::u32(2));
  w.set("tokenizer.ggml.seperator_token_id", MetaValue::u32(0xffffffffu));
  w.set("tokenizer.ggml.padding_token_id", MetaValue::u32(0xffffffffu));
  w.set("llama.context_length", MetaValue::u32(static_cast<uint32_t>(h.seq_len)));
  w.set("llama.embedding_length", MetaValue::u32(static_cast<uint32_t>(dim)));
  w.set("llama.feed_forward_length", MetaValue::u32(static_cast<uint32_t>(hidden)));
  w.set("llama.attention.head_count", MetaValue::u32(static_cast<uint32_t>(h.n_heads)));
  w.set("llama.attention.head_count_kv", MetaValue::u32(static_cast<uint32_t>(h.n_kv_heads)));
  w.set("llama.block_count", MetaValue::u32(static_cast<uint32_t>(L)));
  w.set("llama.rope.dimension_count", MetaValue::u32(static_cast<uint32_t>(head_size)));
  w.set("llama.attention.layer_norm_rms_epsilon", MetaValue::f32(1e-5f));

  auto bytes = [](int64_t n) { return static_cast<size_t>(n) * sizeof(float); };
  w.add_tensor("token_embd.weight", GgmlType::F32, {dim, vocab}, token_embedding, bytes(vocab * dim));
  w.add_tensor("output_norm.weight", GgmlType::F32, {dim}, rms_final, bytes(dim));
  w.add_tensor("output.weight", GgmlType::F32, {dim, vocab}, wcls, bytes(vocab * dim));
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.add_tensor(p + "attn_q.weight", GgmlType::F32, {dim, dim}, wq + l * dim * dim, bytes(dim * dim));
    w.add_tensor(p + "attn_k.weight", GgmlType::F32, {dim, kv_dim}, wk + l * kv_dim * dim, bytes(kv_dim * dim));
    w.add_tensor(p + "attn_v.weight", GgmlType::F32, {dim, kv_dim}, wv + l * kv_dim * dim, bytes(kv_dim * dim));
    w.add_tensor(p + "attn_output.weight", GgmlType::F32, {dim, dim}, wo + l * dim * dim, bytes(dim * dim));
    w.add_tensor(p + "attn_norm.weight", GgmlType::F32, {dim}, rms_att + l * dim, bytes(dim));
    w.add_tensor(p + "ffn_gate.weight", GgmlType::F32, {dim, hidden}, w1 + l * hidden * dim, bytes(hidden * dim));
    w.add_tensor(p + "ffn_down.weight", GgmlType::F32, {hidden, dim}, w2 + l * dim * hidden, bytes(dim * hidden));
    w.add_tensor(p + "ffn_up.weight", GgmlType::F32, {dim, hidden}, w3 + l * hidden * dim, bytes(hidden * dim));
    w.add_tensor(p + "ffn_norm.weight", GgmlType::F32, {dim}, rms_ffn + l * dim, bytes(dim));
  }
  return w.to_bytes();  // copies the weights while the checkpoint is still mapped
}

std::unique_ptr<GgufFile> load_llama2c(const std::string& checkpoint_path, const std::string& tokenizer_path) {
  return GgufFile::from_bytes(convert_llama2c_to_gguf(checkpoint_path, tokenizer_path), checkpoint_path);
}

}  // namespace nucleus
