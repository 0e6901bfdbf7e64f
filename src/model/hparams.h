// The description of a decoder-only transformer, read from GGUF metadata "<arch>.*": the model-wide
// numbers and, per layer, how that layer computes. The forward pass (forward.cpp) is one function
// over this description; a family (llama, qwen2, qwen3, qwen3moe, phi3, gemma2, gemma3, gemma4, qwen35) is
// only a way of filling it in (architecture_families.cpp), never a forward pass of its own.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nucleus {

class GgufFile;

enum class Architecture { Llama, Qwen2, Qwen3, Qwen3Moe, Phi3, Gemma2, Gemma3, Gemma4, Qwen35 };

// The FFN's gate activation: SiLU (SwiGLU) or the tanh GELU (GeGLU, Gemma; through llama.cpp's
// f16 table, ops.h).
enum class Activation { Silu, Gelu };

// One rotary embedding. Pair i (i < n_rot/2) of a head turns by
//   θ_i = freq_scale · pos · freq_base^(−2i/n_rot) / freq_factors[i]
// with cos and sin both multiplied by attn_factor; dimensions ≥ n_rot pass through unchanged.
struct RopeSpec {
  int64_t n_rot = 0;             // rotated dimensions per head (even, ≤ head size)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;       // linear scaling: 1 / rope.scaling.factor
  float attn_factor = 1.0f;      // LongRoPE's attention factor (Phi-3), else 1
  bool neox = false;             // pairs (i, i + n_rot/2) instead of (2i, 2i + 1)
  std::vector<float> freq_factors;  // [n_rot/2] θ divisors (rope_freqs, LongRoPE factors); empty: all 1
  std::string factors_tensor;      // the tensor freq_factors are read from at load ("" for none)
};

// How one layer computes. Attention: q = Wq·norm(x) as [n_head, head_dim], k, v = Wk·, Wv·norm(x) as
// [n_head_kv, head_dim]; FFN: act(Wgate·h) ⊙ (Wup·h) then Wdown, or a mixture of such experts.
struct LayerSpec {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;         // GQA: query head h reads KV head h / (n_head / n_head_kv)
  int64_t head_dim = 0;          // of queries, keys and values
  int64_t n_ff = 0;              // FFN hidden width (per expert for MoE)
  int rope = 0;                  // index into HParams::ropes
  int64_t sliding_window = 0;    // 0: full causal attention; else a query at p sees p − window + 1 .. p
  float attn_scale = 1.0f;       // scores = attn_scale · q·k
  bool attn_scale_on_query = false;  // Gemma 2/3: q ← q · attn_scale after rope, then scores = q·k (llama.cpp's order)
  float attn_softcap = 0.0f;     // > 0: scores ← cap · tanh(scores / cap) (Gemma 2)
  bool qkv_bias = false;         // Qwen2: biases on q, k, v
  bool qk_norm = false;          // per-head RMS norm of q and k (weights attn_q_norm / attn_k_norm) before rope
  bool v_norm = false;           // per-head RMS norm of v without weight (Gemma 4)
  bool k_as_v = false;           // v is the raw key projection (Gemma 4 full layers without attn_v)
  int64_t kv_source = 0;         // the layer whose cached K/V this layer reads (itself unless KV-shared)
  bool post_attention_norm = false;  // x += norm(attention output) instead of x += attention output
  bool post_ffn_norm = false;        // the same for the FFN output
  int64_t n_expert = 0;          // > 0: mixture of experts (softmax router, top n_expert_used, renormalized)
  int64_t n_expert_used = 0;
  bool per_layer_input = false;  // Gemma 4: x += norm(Wproj · (gelu(Winp_gate · x) ⊙ per-layer input))
  bool output_scale = false;     // Gemma 4: x *= layer_output_scale after the layer
  // Qwen3.5: the mixer is a gated delta-net (HParams::delta_net, model/delta_net.h) with a recurrent
  // state per sequence instead of attention; the attention fields above are then unused.
  bool delta_net = false;
  bool attn_output_gate = false;  // Qwen3.5: Wq·h is [n_head, 2·head_dim] (query, then gate); out ⊙= sigmoid(gate)

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  bool stores_kv(int64_t layer) const { return kv_source == layer; }
  bool moe() const { return n_expert > 0; }
};

// Qwen3.5's gated delta-net layers (model/delta_net.h): Hk key heads and Hv value heads of size S,
// value head j reading key head j mod Hk; a causal depthwise conv of conv_kernel taps over q|k|v.
struct DeltaNetSpec {
  int64_t n_k_heads = 0;    // ssm.group_count
  int64_t n_v_heads = 0;    // ssm.time_step_rank
  int64_t head_dim = 0;     // ssm.state_size (key and value head size S)
  int64_t conv_kernel = 0;  // ssm.conv_kernel

  int64_t key_dim() const { return n_k_heads * head_dim; }
  int64_t value_dim() const { return n_v_heads * head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // channels of the conv: q | k | v
  int64_t conv_state_floats() const { return (conv_kernel - 1) * conv_dim(); }   // the last K−1 inputs
  int64_t ssm_state_floats() const { return n_v_heads * head_dim * head_dim; }  // Hv matrices S × S
};

struct HParams {
  Architecture arch = Architecture::Llama;
  std::string arch_name;     // general.architecture
  int64_t n_vocab = 0;       // rows of token_embd (set by Model::load)
  int64_t n_embd = 0;        // model width
  int64_t n_layer = 0;
  int64_t n_ctx_train = 0;   // context length the model was trained for
  int64_t n_ctx = 0;         // the context the model was loaded for (≤ n_ctx_train; Phi-3 picks its factors by it)
  float rms_eps = 1e-5f;     // every RMS norm of the model, QK-norms included
  Activation activation = Activation::Silu;
  float embedding_scale = 1.0f;  // x = token_embd[token] · this (Gemma: √n_embd)
  float final_softcap = 0.0f;    // > 0: logits ← cap · tanh(logits / cap)
  int64_t n_per_layer_input = 0; // Gemma 4: per-layer input width P (0: none)
  bool fused_qkv = false;        // attn_qkv holds Q, K and V rows (Phi-3)
  bool fused_gate_up = false;    // ffn_up holds gate then up rows (Phi-3)
  bool output_always_tied = false;  // the lm_head is token_embd even if output.weight exists (never read)
  std::string ffn_norm_tensor = "ffn_norm";  // Qwen3.5 names its pre-FFN norm "post_attention_norm"
  DeltaNetSpec delta_net;           // when any layer has LayerSpec::delta_net
  std::vector<RopeSpec> ropes;
  std::vector<LayerSpec> layers;  // [n_layer]
  // Tensors the file may carry that this description does not read, each with the reason it is a
  // documented no-op (e.g. Phi-3's other LongRoPE factor set). Any other unread tensor is an error.
  std::vector<std::pair<std::string, std::string>> ignored_tensors;

  // Layer 0's shape, for summaries (inspect, cost estimates of uniform models).
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;

  // Row width of the KV cache: the widest layer's n_head_kv · head_dim (narrower layers use a prefix).
  int64_t kv_dim() const;
  bool any_sliding_window() const;
  bool has_recurrent_layers() const;  // any gated delta-net layer: a per-sequence state beside the KV cache

  // Reads and validates everything; throws Error naming the file and the key for anything missing,
  // out of range, or present but not implemented (an architecture key this description does not use).
  // n_ctx: the context the model will run with (0: n_ctx_train).
  static HParams from_gguf(const GgufFile& file, int64_t n_ctx = 0);
};

const char* activation_name(Activation a);

}  // namespace nucleus
