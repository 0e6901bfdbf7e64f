// Each family's keys → the model description, following llama.cpp (src/llama-model.cpp load_hparams
// and src/models/<family>.cpp). ../shared/models/arch/README.md lists, per family, what differs from
// a plain Llama block; the comments here name the same points.
#include "model/architecture_families.h"

#include <cmath>

#include "core/error.h"
#include "io/gguf.h"

namespace nucleus {

namespace {

// Model-wide numbers every family has.
void read_common(ArchKeys& keys, HParams& hp) {
  hp.n_embd = keys.get_int("embedding_length");
  hp.n_layer = keys.get_int("block_count");
  hp.n_ctx_train = keys.get_int("context_length");
  hp.rms_eps = static_cast<float>(keys.get_float("attention.layer_norm_rms_epsilon", 1e-5));
  keys.accept("vocab_size", "the token embedding's rows give the vocabulary size");
  if (hp.n_layer <= 0 || hp.n_layer > 4096) keys.fail("block_count", "must be in 1..4096");
}

// Head size: attention.key_length when present (Qwen3, Gemma: ≠ n_embd / n_head), else n_embd / n_head.
int64_t read_head_dim(ArchKeys& keys, const HParams& hp, int64_t n_head, const std::string& suffix = "") {
  int64_t head_dim = 0;
  if (keys.has("attention.key_length" + suffix)) {
    head_dim = keys.get_int("attention.key_length" + suffix);
  } else {
    if (n_head <= 0 || hp.n_embd % n_head != 0) keys.fail("attention.head_count", "must divide embedding_length");
    head_dim = hp.n_embd / n_head;
  }
  if (keys.get_int("attention.value_length" + suffix, head_dim) != head_dim)
    keys.fail("attention.value_length" + suffix, "differs from the key length, which nucleus does not implement");
  return head_dim;
}

// rope.scaling.*: linear scaling (θ · 1/factor) is implemented; YaRN and others are refused.
void read_rope_scaling(ArchKeys& keys, RopeSpec& rope) {
  const std::string type = keys.get_string("rope.scaling.type", "none");
  if (type != "none" && type != "linear")
    keys.fail("rope.scaling.type", "is '" + type + "', which nucleus does not implement (only linear scaling)");
  double factor = keys.get_float("rope.scaling.factor", 0.0);
  if (factor == 0.0) factor = keys.get_float("rope.scale_linear", 0.0);
  if (factor < 0.0 || !std::isfinite(factor)) keys.fail("rope.scaling.factor", "must be positive");
  if (factor > 0.0) rope.freq_scale = static_cast<float>(1.0 / factor);
  keys.accept("rope.scaling.original_context_length", "only YaRN and LongRoPE use it");
}

// Layers that all compute alike: n_head, n_head_kv (scalar or per layer), n_ff (scalar or per layer).
void uniform_layers(ArchKeys& keys, HParams& hp, int64_t head_dim, const std::string& ff_key = "feed_forward_length") {
  const int64_t n_head = keys.get_int("attention.head_count");
  const std::vector<int64_t> n_head_kv = keys.get_per_layer_int("attention.head_count_kv", hp.n_layer, n_head);
  const std::vector<int64_t> n_ff = keys.get_per_layer_int(ff_key, hp.n_layer, 0);
  hp.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    LayerSpec& l = hp.layers[static_cast<size_t>(il)];
    l.n_head = n_head;
    l.n_head_kv = n_head_kv[static_cast<size_t>(il)];
    l.head_dim = head_dim;
    l.n_ff = n_ff[static_cast<size_t>(il)];
    l.kv_source = il;
    l.attn_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  }
}

// Experts (Mixtral inside `llama`, Qwen3-MoE): softmax router over all experts, top-k, renormalized.
void read_experts(ArchKeys& keys, HParams& hp, int64_t n_ff_expert) {
  const int64_t n_expert = keys.get_int("expert_count", 0);
  const int64_t n_used = keys.get_int("expert_used_count", 0);
  if (n_expert == 0 && n_used == 0) return;
  if (n_expert < 1 || n_used < 1 || n_used > n_expert) keys.fail("expert_used_count", "must be in 1..expert_count");
  for (LayerSpec& l : hp.layers) {
    l.n_expert = n_expert;
    l.n_expert_used = n_used;
    if (n_ff_expert > 0) l.n_ff = n_ff_expert;
  }
}

const char* kRopeFreqs = "rope_freqs.weight";

// llama: NORM rope over the whole head, optional rope_freqs (Llama 3.1+ scaling), optional experts.
void describe_llama(const GgufFile& file, ArchKeys& keys, HParams& hp) {
  read_common(keys, hp);
  const int64_t n_head = keys.get_int("attention.head_count");
  const int64_t head_dim = read_head_dim(keys, hp, n_head);
  uniform_layers(keys, hp, head_dim);
  RopeSpec rope;
  rope.n_rot = keys.get_int("rope.dimension_count", head_dim);
  if (rope.n_rot != head_dim)  // llama.cpp: "invalid n_rot" for this family
    keys.fail("rope.dimension_count", "must equal the head size (" + std::to_string(head_dim) + ") for llama");
  rope.freq_base = static_cast<float>(keys.get_float("rope.freq_base", 10000.0));
  read_rope_scaling(keys, rope);
  if (file.find_tensor(kRopeFreqs)) rope.factors_tensor = kRopeFreqs;  // Llama 3.1+ rope scaling
  hp.ropes = {rope};
  read_experts(keys, hp, 0);  // feed_forward_length is the per-expert size in llama files
  for (int64_t il = 0; il < hp.n_layer; ++il)  // optional q/k/v biases (llama.cpp creates them when present)
    hp.layers[static_cast<size_t>(il)].qkv_bias = file.find_tensor("blk." + std::to_string(il) + ".attn_q.bias") != nullptr;
}

// NEOX rope over n_rot (default: the head size) with the family's base and optional linear scaling.
RopeSpec read_neox_rope(ArchKeys& keys, int64_t head_dim) {
  RopeSpec rope;
  rope.neox = true;
  rope.n_rot = keys.get_int("rope.dimension_count", head_dim);
  rope.freq_base = static_cast<float>(keys.get_float("rope.freq_base", 10000.0));
  read_rope_scaling(keys, rope);
  return rope;
}

// qwen2: as llama with NEOX rope and q/k/v biases.
void describe_qwen2(const GgufFile& file, ArchKeys& keys, HParams& hp) {
  read_common(keys, hp);
  const int64_t n_head = keys.get_int("attention.head_count");
  const int64_t head_dim = read_head_dim(keys, hp, n_head);
  uniform_layers(keys, hp, head_dim);
  for (LayerSpec& l : hp.layers) l.qkv_bias = true;
  (void)file;
  hp.ropes = {read_neox_rope(keys, head_dim)};
}

// qwen3 / qwen3moe: per-head QK RMS-norm before NEOX rope; head size from key_length; n_rot defaults
// to the head size (not n_embd / n_head). qwen3moe sizes its experts by expert_feed_forward_length.
void describe_qwen3_common(ArchKeys& keys, HParams& hp, bool moe) {
  read_common(keys, hp);
  const int64_t n_head = keys.get_int("attention.head_count");
  const int64_t head_dim = read_head_dim(keys, hp, n_head);
  uniform_layers(keys, hp, head_dim);
  for (LayerSpec& l : hp.layers) l.qk_norm = true;
  hp.ropes = {read_neox_rope(keys, head_dim)};
  if (moe) {
    const int64_t n_used = keys.get_int("expert_used_count", 0);
    int64_t n_ff_expert = keys.get_int("expert_feed_forward_length", 0);
    if (n_ff_expert == 0 && n_used > 0) n_ff_expert = hp.layers[0].n_ff / n_used;
    read_experts(keys, hp, n_ff_expert);
    if (!hp.layers[0].moe()) keys.fail("expert_count", "is missing (required for qwen3moe)");
  }
}
void describe_qwen3(const GgufFile&, ArchKeys& keys, HParams& hp) { describe_qwen3_common(keys, hp, false); }
void describe_qwen3moe(const GgufFile&, ArchKeys& keys, HParams& hp) { describe_qwen3_common(keys, hp, true); }

// phi3 (Phi-3, Phi-3.5, Phi-4-mini): fused QKV and gate|up, partial NEOX rope, LongRoPE factors
// chosen ONCE by the context size (long iff n_ctx > original_context_length, as llama.cpp does), an
// attention factor on cos and sin, and no sliding window (llama.cpp disables Phi's).
void describe_phi3(const GgufFile& file, ArchKeys& keys, HParams& hp) {
  const int64_t n_ctx = hp.n_ctx;  // requested by the caller (0: the training context)
  read_common(keys, hp);
  const int64_t n_head = keys.get_int("attention.head_count");
  const int64_t head_dim = read_head_dim(keys, hp, n_head);
  if (n_head * head_dim != hp.n_embd) keys.fail("attention.head_count", "times the head size must equal embedding_length for phi3");
  uniform_layers(keys, hp, head_dim);
  for (LayerSpec& l : hp.layers) l.attn_scale_on_query = true;  // llama.cpp scales Q by 1/√head after rope
  hp.fused_qkv = true;
  hp.fused_gate_up = true;
  RopeSpec rope;
  rope.neox = true;
  rope.n_rot = keys.get_int("rope.dimension_count", head_dim);
  rope.freq_base = static_cast<float>(keys.get_float("rope.freq_base", 10000.0));
  rope.attn_factor = static_cast<float>(keys.get_float("rope.scaling.attn_factor", 1.0));
  const std::string type = keys.get_string("rope.scaling.type", "none");
  if (type != "none" && type != "longrope")
    keys.fail("rope.scaling.type", "is '" + type + "', which nucleus does not implement for phi3");
  const int64_t original = keys.get_int("rope.scaling.original_context_length", hp.n_ctx_train);
  keys.accept("attention.sliding_window", "llama.cpp disables Phi-3's sliding window; attention is full causal");
  hp.n_ctx = n_ctx > 0 ? n_ctx : hp.n_ctx_train;
  const bool use_long = hp.n_ctx > original;
  const char* used = use_long ? "rope_factors_long.weight" : "rope_factors_short.weight";
  const char* other = use_long ? "rope_factors_short.weight" : "rope_factors_long.weight";
  if (file.find_tensor(used)) rope.factors_tensor = used;
  else if (file.find_tensor(other)) throw Error(file.path() + ": has '" + other + "' but not '" + used + "', which a context of " + std::to_string(hp.n_ctx) + " tokens needs");
  if (file.find_tensor(other))
    hp.ignored_tensors.push_back({other, "the other LongRoPE factor set, used only with a context on the other side of original_context_length"});
  hp.ropes = {rope};
}

// Gemma 2 / 3: √n_embd embedding scale, post-attention and post-FFN norms, GeGLU, NEOX rope, q scaled
// by 1/√key_length (1/√(n_embd/n_head) for the 27B shapes), sliding window on layers il % P < P − 1.
// Returns the sliding-window period P.
int64_t describe_gemma_common(ArchKeys& keys, HParams& hp, int default_pattern, int64_t layers_with_embd_head_scale) {
  read_common(keys, hp);
  const int64_t n_head = keys.get_int("attention.head_count");
  const int64_t head_dim = read_head_dim(keys, hp, n_head);
  uniform_layers(keys, hp, head_dim);
  hp.activation = Activation::Gelu;
  hp.embedding_scale = std::sqrt(static_cast<float>(hp.n_embd));
  const float q_scale = hp.n_layer == layers_with_embd_head_scale
                            ? 1.0f / std::sqrt(static_cast<float>(hp.n_embd / n_head))
                            : 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (LayerSpec& l : hp.layers) {
    l.post_attention_norm = true;
    l.post_ffn_norm = true;
    l.attn_scale = q_scale;
    l.attn_scale_on_query = true;
  }
  if (keys.is_array("attention.sliding_window_pattern"))
    keys.fail("attention.sliding_window_pattern", "is an array; this family takes one period P (llama.cpp would ignore it)");
  const int64_t pattern = keys.get_int("attention.sliding_window_pattern", default_pattern);
  if (pattern < 1) keys.fail("attention.sliding_window_pattern", "must be at least 1");
  return pattern;
}

void describe_gemma2(const GgufFile&, ArchKeys& keys, HParams& hp) {
  const int64_t period = describe_gemma_common(keys, hp, 2, 46);
  hp.output_always_tied = true;
  const float attn_cap = static_cast<float>(keys.get_float("attn_logit_softcapping", 50.0));
  hp.final_softcap = static_cast<float>(keys.get_float("final_logit_softcapping", 30.0));
  const int64_t window = keys.get_int("attention.sliding_window", 4096);
  if (window < 1) keys.fail("attention.sliding_window", "must be at least 1");
  RopeSpec global;
  global.neox = true;
  global.n_rot = keys.get_int("rope.dimension_count", hp.layers[0].head_dim);
  global.freq_base = static_cast<float>(keys.get_float("rope.freq_base", 10000.0));
  RopeSpec local = global;
  local.freq_base = static_cast<float>(keys.get_float("rope.freq_base_swa", global.freq_base));
  hp.ropes = {global, local};
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    LayerSpec& l = hp.layers[static_cast<size_t>(il)];
    l.attn_softcap = attn_cap;
    const bool sliding = il % period < period - 1;
    l.sliding_window = sliding ? window : 0;
    l.rope = sliding ? 1 : 0;
  }
}

// Gemma 3: Gemma 2 plus QK-norm, no attention soft-cap, final soft-cap only when the key exists,
// 5 local : 1 global by default, local rope base rope.freq_base_swa (default 10000) without scaling,
// linear scaling (1 / rope.scaling.factor) on global layers only. No window key: every layer global.
void describe_gemma3(const GgufFile&, ArchKeys& keys, HParams& hp) {
  const int64_t period = describe_gemma_common(keys, hp, 6, 62);
  hp.final_softcap = static_cast<float>(keys.get_float("final_logit_softcapping", 0.0));
  const int64_t window = keys.get_int("attention.sliding_window", 0);
  if (window < 0) keys.fail("attention.sliding_window", "must not be negative");
  const RopeSpec global = read_neox_rope(keys, hp.layers[0].head_dim);
  RopeSpec local = global;
  local.freq_base = static_cast<float>(keys.get_float("rope.freq_base_swa", 10000.0));
  local.freq_scale = 1.0f;
  hp.ropes = {global, local};
  if (window > 0 && period == 1)  // llama.cpp aborts (is_swa_any); the converter writes no window
    keys.fail("attention.sliding_window_pattern", "is 1 while a sliding window is set: no layer would slide");
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    LayerSpec& l = hp.layers[static_cast<size_t>(il)];
    l.qk_norm = true;
    const bool sliding = window > 0 && il % period < period - 1;
    l.sliding_window = sliding ? window : 0;
    l.rope = sliding ? 1 : 0;
  }
}

// Gemma 4 (dense): per-layer kinds from a bool pattern, per-kind head size / n_rot / rope base, per-layer
// KV heads and FFN width, KV sharing for the last shared_kv_layers layers, attention scale 1, QK-norm and
// an unweighted V-norm, per-layer input embeddings, a layer output scale and a final soft-cap.
void describe_gemma4(const GgufFile& file, ArchKeys& keys, HParams& hp) {
  read_common(keys, hp);
  hp.activation = Activation::Gelu;
  hp.embedding_scale = std::sqrt(static_cast<float>(hp.n_embd));
  hp.final_softcap = static_cast<float>(keys.get_float("final_logit_softcapping", 30.0));
  hp.n_per_layer_input = keys.get_int("embedding_length_per_layer_input");
  if (hp.n_per_layer_input < 0) keys.fail("embedding_length_per_layer_input", "must not be negative");
  const int64_t n_head = keys.get_int("attention.head_count");
  const int64_t head_full = read_head_dim(keys, hp, n_head);
  const int64_t head_swa = read_head_dim(keys, hp, n_head, "_swa");
  const std::vector<int64_t> n_head_kv = keys.get_per_layer_int("attention.head_count_kv", hp.n_layer, n_head);
  const std::vector<int64_t> n_ff = keys.get_per_layer_int("feed_forward_length", hp.n_layer, 0);
  const std::vector<bool> sliding = keys.get_bool_array("attention.sliding_window_pattern", hp.n_layer);
  const int64_t window = keys.get_int("attention.sliding_window");
  if (window < 1) keys.fail("attention.sliding_window", "must be at least 1");
  const int64_t n_shared = keys.get_int("attention.shared_kv_layers", 0);
  if (n_shared < 0 || n_shared >= hp.n_layer) keys.fail("attention.shared_kv_layers", "must be in 0..block_count-1");
  RopeSpec full;
  full.neox = true;
  full.n_rot = keys.get_int("rope.dimension_count", head_full);
  full.freq_base = static_cast<float>(keys.get_float("rope.freq_base", 10000.0));
  if (file.find_tensor(kRopeFreqs)) full.factors_tensor = kRopeFreqs;  // "proportional" rope of full layers
  RopeSpec local;
  local.neox = true;
  local.n_rot = keys.get_int("rope.dimension_count_swa", head_swa);
  local.freq_base = static_cast<float>(keys.get_float("rope.freq_base_swa", 10000.0));
  hp.ropes = {full, local};
  const int64_t n_kv_layers = hp.n_layer - n_shared;
  hp.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    LayerSpec& l = hp.layers[static_cast<size_t>(il)];
    const bool swa = sliding[static_cast<size_t>(il)];
    l.n_head = n_head;
    l.n_head_kv = n_head_kv[static_cast<size_t>(il)];
    l.head_dim = swa ? head_swa : head_full;
    l.n_ff = n_ff[static_cast<size_t>(il)];
    l.rope = swa ? 1 : 0;
    l.sliding_window = swa ? window : 0;
    l.attn_scale = 1.0f;
    l.qk_norm = true;
    l.v_norm = true;
    l.post_attention_norm = true;
    l.post_ffn_norm = true;
    l.per_layer_input = hp.n_per_layer_input > 0;
    l.output_scale = true;
    // llama.cpp's fixed rule: a shared sliding layer reads layer n_kv − 2, a shared full one n_kv − 1.
    l.kv_source = il < n_kv_layers ? il : (swa ? n_kv_layers - 2 : n_kv_layers - 1);
    if (l.kv_source < 0) keys.fail("attention.shared_kv_layers", "leaves no layer to share K/V from");
    const std::string p = "blk." + std::to_string(il) + ".";
    if (l.kv_source == il) {
      l.k_as_v = file.find_tensor(p + "attn_v.weight") == nullptr;  // full layers: V is the raw K projection
    } else {
      for (const char* t : {"attn_k.weight", "attn_k_norm.weight", "attn_v.weight"})
        if (file.find_tensor(p + t))
          hp.ignored_tensors.push_back({p + t, "a KV-shared layer reads another layer's cache; llama.cpp creates these and never uses them"});
    }
  }
}

// qwen35 (Qwen3.5): a hybrid. Layer il is a gated delta-net layer (model/delta_net.h) iff
// (il + 1) % full_attention_interval ≠ 0 (an attention.recurrent_layers bool array overrides), else
// gated attention: Wq gives a query and a sigmoid output gate per head, QK-norm, and IMROPE (multi-
// section rope) on the first n_rot dims with NEOX pairing. For text every section's position is p
// except the fourth ("e"), which is 0: pairs that fall in it stay unrotated (a frequency factor of
// 1e30, as Gemma 4's proportional rope). The pre-FFN norm is stored as "post_attention_norm".
void describe_qwen35(const GgufFile&, ArchKeys& keys, HParams& hp) {
  read_common(keys, hp);
  const int64_t n_head = keys.get_int("attention.head_count");
  const int64_t head_dim = read_head_dim(keys, hp, n_head);
  uniform_layers(keys, hp, head_dim);
  hp.ffn_norm_tensor = "post_attention_norm";
  RopeSpec rope;
  rope.neox = true;
  rope.n_rot = keys.get_int("rope.dimension_count", head_dim);
  rope.freq_base = static_cast<float>(keys.get_float("rope.freq_base", 10000.0));
  read_rope_scaling(keys, rope);
  const std::vector<int64_t> sections = keys.get_int_array("rope.dimension_sections");
  if (sections.size() != 4) keys.fail("rope.dimension_sections", "must have 4 elements (t, h, w, e)");
  int64_t sector_count = 0;
  for (int64_t v : sections) {
    if (v < 0) keys.fail("rope.dimension_sections", "must not be negative");
    sector_count += v;
  }
  if (sector_count <= 0) keys.fail("rope.dimension_sections", "must not all be 0");
  if (rope.n_rot % 2 == 0 && rope.n_rot > 0) {
    // ggml's IMROPE: pair i has sector s = i mod Σ; t if s%3==0 && s<3·t, h if s%3==1 && s<3·h,
    // w if s%3==2 && s<3·w, else e (position 0 for text: unrotated).
    std::vector<float> factors(static_cast<size_t>(rope.n_rot / 2), 1.0f);
    bool any_unrotated = false;
    for (int64_t i = 0; i < rope.n_rot / 2; ++i) {
      const int64_t sector = i % sector_count;
      const bool rotated = (sector % 3 == 0 && sector < 3 * sections[0]) || (sector % 3 == 1 && sector < 3 * sections[1]) ||
                           (sector % 3 == 2 && sector < 3 * sections[2]);
      if (!rotated) {
        factors[static_cast<size_t>(i)] = 1e30f;
        any_unrotated = true;
      }
    }
    if (any_unrotated) rope.freq_factors = factors;
  }
  hp.ropes = {rope};
  DeltaNetSpec& d = hp.delta_net;
  d.conv_kernel = keys.get_int("ssm.conv_kernel");
  d.head_dim = keys.get_int("ssm.state_size");
  d.n_k_heads = keys.get_int("ssm.group_count");
  d.n_v_heads = keys.get_int("ssm.time_step_rank");
  if (keys.get_int("ssm.inner_size") != d.value_dim())
    keys.fail("ssm.inner_size", "must equal ssm.time_step_rank × ssm.state_size");
  std::vector<bool> recurrent(static_cast<size_t>(hp.n_layer));
  if (keys.has("attention.recurrent_layers")) {
    recurrent = keys.get_bool_array("attention.recurrent_layers", hp.n_layer);
    keys.accept("full_attention_interval", "attention.recurrent_layers overrides it");
  } else {
    const int64_t interval = keys.get_int("full_attention_interval", 4);
    if (interval < 1) keys.fail("full_attention_interval", "must be at least 1");
    for (int64_t il = 0; il < hp.n_layer; ++il) recurrent[static_cast<size_t>(il)] = (il + 1) % interval != 0;
  }
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    LayerSpec& l = hp.layers[static_cast<size_t>(il)];
    l.delta_net = recurrent[static_cast<size_t>(il)];
    l.qk_norm = !l.delta_net;
    l.attn_output_gate = !l.delta_net;
  }
}

const ArchitectureFamily kFamilies[] = {
    {"llama", Architecture::Llama, describe_llama},
    {"qwen2", Architecture::Qwen2, describe_qwen2},
    {"qwen3", Architecture::Qwen3, describe_qwen3},
    {"qwen3moe", Architecture::Qwen3Moe, describe_qwen3moe},
    {"phi3", Architecture::Phi3, describe_phi3},
    {"gemma2", Architecture::Gemma2, describe_gemma2},
    {"gemma3", Architecture::Gemma3, describe_gemma3},
    {"gemma4", Architecture::Gemma4, describe_gemma4},
    {"qwen35", Architecture::Qwen35, describe_qwen35},
};

}  // namespace

const ArchitectureFamily* find_architecture_family(const std::string& name) {
  for (const ArchitectureFamily& f : kFamilies)
    if (name == f.name) return &f;
  return nullptr;
}

std::string supported_architecture_names() {
  std::string names;
  for (const ArchitectureFamily& f : kFamilies) names += (names.empty() ? "" : ", ") + std::string(f.name);
  return names;
}

}  // namespace nucleus
