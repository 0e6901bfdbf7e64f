#include "model/hparams.h"

#include "core/error.h"
#include "io/gguf.h"

namespace nucleus {

HParams HParams::from_gguf(const GgufFile& file) {
  HParams hp;
  hp.arch_name = file.get_string("general.architecture");
  if (hp.arch_name == "llama") hp.arch = Architecture::Llama;
  else if (hp.arch_name == "qwen2") hp.arch = Architecture::Qwen2;
  else throw Error(file.path() + ": unsupported architecture '" + hp.arch_name + "' (supported: llama, qwen2)");
  const std::string p = hp.arch_name + ".";
  hp.n_embd = file.get_int(p + "embedding_length");
  hp.n_layer = file.get_int(p + "block_count");
  hp.n_head = file.get_int(p + "attention.head_count");
  hp.n_head_kv = file.get_int(p + "attention.head_count_kv", hp.n_head);
  hp.n_ff = file.get_int(p + "feed_forward_length");
  hp.n_ctx_train = file.get_int(p + "context_length");
  hp.rms_eps = static_cast<float>(file.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5));
  hp.rope_freq_base = static_cast<float>(file.get_float(p + "rope.freq_base", 10000.0));
  hp.rope_neox = hp.arch == Architecture::Qwen2;

  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(file.path() + ": invalid hyper-parameters: " + what);
  };
  require(hp.n_embd > 0 && hp.n_embd <= (1 << 20), "embedding_length must be in 1..2^20");
  require(hp.n_layer > 0 && hp.n_layer <= 4096, "block_count must be in 1..4096");
  require(hp.n_head > 0 && hp.n_head <= hp.n_embd && hp.n_embd % hp.n_head == 0, "head_count must divide embedding_length");
  require(hp.n_head_kv > 0 && hp.n_head % hp.n_head_kv == 0, "head_count_kv must divide head_count");
  require(hp.n_ff > 0 && hp.n_ff <= (1 << 24), "feed_forward_length must be in 1..2^24");
  require(hp.n_ctx_train > 0 && hp.n_ctx_train <= (1 << 24), "context_length must be in 1..2^24");
  require(hp.rms_eps > 0.0f && hp.rope_freq_base > 0.0f, "epsilon and rope.freq_base must be positive");
  hp.head_dim = hp.n_embd / hp.n_head;
  hp.n_rot = file.get_int(p + "rope.dimension_count", hp.head_dim);
  require(hp.n_rot > 0 && hp.n_rot <= hp.head_dim && hp.n_rot % 2 == 0, "rope.dimension_count must be even and ≤ head size");
  return hp;
}

}  // namespace nucleus
