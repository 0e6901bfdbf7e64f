// `nucleus synth`: a model of any shape with random weights and a real vocabulary's tokenizer,
// for benchmarks at real sizes (like vLLM's dummy weights). Deterministic in the seed.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/ggml_type.h"

namespace nucleus {

struct SyntheticModelSpec {
  // "llama" (with experts > 0: Mixtral-style MoE), "qwen2" (QKV biases, NEOX rope, tied output),
  // "qwen3" (QK-norm, NEOX rope), "qwen3moe" (qwen3 with `experts` experts of ffn each), "phi3"
  // (fused QKV and gate|up), "gemma2" (GELU, post-norms, soft-caps, tied output, alternating
  // sliding-window layers), "gemma3" (gemma2 with QK-norm, no attention soft-cap, 5 local : 1 global)
  // or "gemma4" (dense: gemma3's pattern, full layers with twice the head size and K as V), or
  // "qwen35" (hybrid: 3 gated delta-net layers : 1 gated attention layer; delta-net key heads =
  // kv_heads, value heads = heads, head size dim / heads)
  std::string arch = "llama";
  std::string vocab_path;      // GGUF whose tokenizer.* metadata is copied
  std::string chat_template;   // Jinja source for tokenizer.chat_template (empty: the vocabulary's, if any)
  // Vocabulary entries to rename, e.g. Qwen's padding slots into the added tokens real Qwen
  // vocabularies have there (<tool_call> at 151657, <think> at 151667): only a USER_DEFINED or UNUSED
  // entry may be renamed, and a text already in the vocabulary is an Error. control: the entry becomes
  // a CONTROL token (as Mistral's [TOOL_CALLS] is), else it stays USER_DEFINED.
  struct RenamedToken {
    int64_t id = 0;
    std::string text;
    bool control = false;
  };
  std::vector<RenamedToken> renamed_tokens;
  int64_t dim = 256, layers = 2, heads = 8, kv_heads = 8, ffn = 688;
  int64_t context_length = 2048;
  int64_t experts = 0, experts_used = 2;  // llama, qwen3moe: FFN as `experts` experts, top-`experts_used`
  int64_t window = 1024;                  // gemma2-4: the local layers' sliding window
  // qwen35 only (0: the defaults above): the attention layers' head size, and the delta-net
  // layers' key heads, value heads and state size (Qwen3.5-0.8B: 256; 16, 16, 128).
  int64_t head_dim = 0, ssm_k_heads = 0, ssm_v_heads = 0, ssm_state = 0;
  GgmlType type = GgmlType::F16;  // matrices; norms and biases stay F32
  uint64_t seed = 1;
};

// Writes the model; throws Error for an inconsistent shape or an unreadable vocabulary.
void write_synthetic_model(const SyntheticModelSpec& spec, const std::string& output_path, int n_threads);

}  // namespace nucleus
