#include "model/hparams.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "io/gguf.h"
#include "model/architecture_families.h"

namespace nucleus {

int64_t HParams::kv_dim() const {
  int64_t widest = 0;
  for (const LayerSpec& l : layers) widest = std::max(widest, l.kv_dim());
  return widest;
}

bool HParams::any_sliding_window() const {
  for (const LayerSpec& l : layers)
    if (l.sliding_window > 0) return true;
  return false;
}

bool HParams::has_recurrent_layers() const {
  for (const LayerSpec& l : layers)
    if (l.delta_net) return true;
  return false;
}

const char* activation_name(Activation a) { return a == Activation::Gelu ? "gelu" : "silu"; }

HParams HParams::from_gguf(const GgufFile& file, int64_t n_ctx) {
  HParams hp;
  hp.arch_name = file.get_string("general.architecture");
  const ArchitectureFamily* family = find_architecture_family(hp.arch_name);
  if (!family)
    throw Error(file.path() + ": unsupported architecture '" + hp.arch_name + "' (supported: " +
                supported_architecture_names() + ")");
  if (n_ctx < 0) throw Error(file.path() + ": context size must be positive");
  hp.arch = family->arch;
  hp.n_ctx = n_ctx;  // phi3 chooses its rope factors by it
  ArchKeys keys(file, hp.arch_name);
  family->describe(file, keys, hp);
  if (hp.n_ctx == 0) hp.n_ctx = n_ctx > 0 ? n_ctx : hp.n_ctx_train;
  keys.reject_unread();

  // What every family's description must satisfy before any tensor is bound.
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(file.path() + ": invalid hyper-parameters: " + what);
  };
  require(hp.n_embd > 0 && hp.n_embd <= (1 << 20), "embedding_length must be in 1..2^20");
  require(hp.n_layer > 0 && hp.n_layer <= 4096, "block_count must be in 1..4096");
  require(hp.n_ctx_train > 0 && hp.n_ctx_train <= (1 << 24), "context_length must be in 1..2^24");
  require(hp.rms_eps > 0.0f && std::isfinite(hp.rms_eps), "layer_norm_rms_epsilon must be positive");
  require(static_cast<int64_t>(hp.layers.size()) == hp.n_layer, "one layer description per block");
  require(!hp.ropes.empty(), "a rope description");
  for (size_t il = 0; il < hp.layers.size(); ++il) {
    const LayerSpec& l = hp.layers[il];
    const std::string at = " (layer " + std::to_string(il) + ")";
    require(l.n_head > 0 && l.n_head <= (1 << 16), "head_count must be in 1..65536" + at);
    require(l.n_head_kv > 0 && l.n_head % l.n_head_kv == 0, "head_count_kv must divide head_count" + at);
    require(l.head_dim > 0 && l.head_dim <= (1 << 14), "head size must be in 1..16384" + at);
    require(l.n_ff > 0 && l.n_ff <= (1 << 24), "feed_forward_length must be in 1..2^24" + at);
    require(l.rope >= 0 && l.rope < static_cast<int>(hp.ropes.size()), "rope index" + at);
    const RopeSpec& r = hp.ropes[static_cast<size_t>(l.rope)];
    require(r.n_rot > 0 && r.n_rot <= l.head_dim && r.n_rot % 2 == 0,
            "rope.dimension_count must be even and at most the head size" + at);
    require(l.sliding_window >= 0, "sliding_window must not be negative" + at);
    require(l.kv_source >= 0 && l.kv_source <= static_cast<int64_t>(il), "a KV-shared layer reads an earlier layer" + at);
    const LayerSpec& src = hp.layers[static_cast<size_t>(l.kv_source)];
    require(src.kv_source == l.kv_source && src.head_dim == l.head_dim && src.n_head_kv == l.n_head_kv &&
                src.sliding_window == l.sliding_window && src.rope == l.rope,
            "a KV-shared layer must read a layer of its own kind and shape" + at);
    require(!l.moe() || (l.n_expert_used > 0 && l.n_expert_used <= l.n_expert && l.n_expert <= 1024),
            "expert_used_count must be in 1..expert_count (≤ 1024)" + at);
  }
  if (hp.has_recurrent_layers()) {
    const DeltaNetSpec& d = hp.delta_net;
    require(d.n_k_heads > 0 && d.n_v_heads > 0 && d.n_v_heads % d.n_k_heads == 0,
            "ssm.group_count must divide ssm.time_step_rank");
    require(d.head_dim > 0 && d.head_dim <= 1024, "ssm.state_size must be in 1..1024");
    require(d.conv_kernel >= 1 && d.conv_kernel <= 64, "ssm.conv_kernel must be in 1..64");
  }
  for (const RopeSpec& r : hp.ropes)
    require(r.freq_base > 0.0f && r.freq_scale > 0.0f && std::isfinite(r.attn_factor), "rope base and scales must be positive");
  const LayerSpec& first = hp.layers[0];
  hp.n_head = first.n_head;
  hp.n_head_kv = first.n_head_kv;
  hp.head_dim = first.head_dim;
  hp.n_ff = first.n_ff;
  return hp;
}

}  // namespace nucleus
