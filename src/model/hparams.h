// Hyper-parameters of a decoder-only transformer, read from GGUF metadata "<arch>.*".
#pragma once
#include <cstdint>
#include <string>

namespace nucleus {

class GgufFile;

enum class Architecture { Llama, Qwen2 };

struct HParams {
  Architecture arch = Architecture::Llama;
  std::string arch_name;     // "llama", "qwen2"
  int64_t n_vocab = 0;
  int64_t n_embd = 0;        // model width (dim)
  int64_t n_layer = 0;
  int64_t n_head = 0;        // query heads
  int64_t n_head_kv = 0;     // key/value heads (GQA when < n_head)
  int64_t head_dim = 0;      // n_embd / n_head
  int64_t n_ff = 0;          // FFN hidden width
  int64_t n_ctx_train = 0;   // context length the model was trained for
  int64_t n_rot = 0;         // rotated dimensions per head
  float rope_freq_base = 10000.0f;
  bool rope_neox = false;    // qwen2 rotates (i, i + n_rot/2) pairs
  float rms_eps = 1e-5f;

  int64_t kv_dim() const { return n_head_kv * head_dim; }

  // Validates everything (positive sizes, divisibility) and throws Error naming the file.
  static HParams from_gguf(const GgufFile& file);
};

}  // namespace nucleus
