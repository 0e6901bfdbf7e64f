// llama2.c checkpoints (Karpathy's `run.c` format) and their tokenizer files.
//
//   checkpoint: 7 × i32 header {dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
//               seq_len} (vocab_size < 0: separate classifier), then f32 weights in order:
//               token_embedding[vocab, dim], rms_att[L, dim], wq[L, dim, dim],
//               wk[L, kv_dim, dim], wv[L, kv_dim, dim], wo[L, dim, dim], rms_ffn[L, dim],
//               w1[L, hidden, dim], w2[L, dim, hidden], w3[L, hidden, dim], rms_final[dim],
//               freq_cis_real/imag[seq_len, head_size/2] (unused), wcls[vocab, dim] if separate.
//   tokenizer:  i32 max_token_length, then per token {f32 score, i32 length, bytes}.
//
// Conversion produces a GGUF image with the tensor names and metadata that llama.cpp's
// published stories260K.gguf uses, so a checkpoint loads through the one GGUF path.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"

namespace nucleus {

// Throws Error naming the file and the problem (bad header, truncation, size mismatch).
std::vector<uint8_t> convert_llama2c_to_gguf(const std::string& checkpoint_path, const std::string& tokenizer_path);
std::unique_ptr<GgufFile> load_llama2c(const std::string& checkpoint_path, const std::string& tokenizer_path);

}  // namespace nucleus
