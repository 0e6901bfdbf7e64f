// nucleus inspect: what a model file holds.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"

namespace nucleus::cli {

namespace {

struct InspectOptions {
  ModelSource source;
  bool all_metadata = false;
};

int run_inspect(const InspectOptions& options) {
  LoadedModel loaded = load_model(options.source);
  const Model& model = *loaded.model;
  const HParams& hp = model.hparams();
  const GgufFile& file = model.file();
  std::printf("file:          %s (%.2f MiB, GGUF v%u)\n", file.path().c_str(), static_cast<double>(file.file_size()) / 1048576.0,
              file.version());
  std::printf("architecture:  %s%s\n", hp.arch_name.c_str(), file.has("general.name") ? (" (" + file.get_string("general.name") + ")").c_str() : "");
  std::printf("n_vocab %lld, n_embd %lld, n_layer %lld, n_head %lld, n_head_kv %lld, head_dim %lld, n_ff %lld\n",
              (long long)hp.n_vocab, (long long)hp.n_embd, (long long)hp.n_layer, (long long)hp.n_head,
              (long long)hp.n_head_kv, (long long)hp.head_dim, (long long)hp.n_ff);
  std::printf("context %lld (loaded for %lld), rms_eps %g, activation %s, embedding scale %g, final soft-cap %g, output %s\n",
              (long long)hp.n_ctx_train, (long long)hp.n_ctx, hp.rms_eps, activation_name(hp.activation), hp.embedding_scale,
              hp.final_softcap, model.weights().tied_output ? "tied to token_embd" : "separate");
  for (size_t r = 0; r < hp.ropes.size(); ++r) {
    const RopeSpec& rope = hp.ropes[r];
    std::printf("rope %zu:        %s, n_rot %lld, base %g, freq_scale %g, attn_factor %g%s%s\n", r, rope.neox ? "neox" : "normal",
                (long long)rope.n_rot, rope.freq_base, rope.freq_scale, rope.attn_factor,
                rope.factors_tensor.empty() ? "" : ", factors from ", rope.factors_tensor.c_str());
  }
  for (size_t il = 0; il < hp.layers.size(); ++il) {
    const LayerSpec& l = hp.layers[il];
    std::string features;
    auto add = [&](bool on, const std::string& name) {
      if (on) features += (features.empty() ? "" : ", ") + name;
    };
    add(l.sliding_window > 0, "sliding window " + std::to_string(l.sliding_window));
    add(l.attn_softcap > 0, "attention soft-cap " + std::to_string(l.attn_softcap));
    add(l.qkv_bias, "qkv bias");
    add(l.qk_norm, "QK-norm");
    add(l.v_norm, "V-norm");
    add(l.k_as_v, "K as V");
    add(!l.stores_kv(static_cast<int64_t>(il)), "KV of layer " + std::to_string(l.kv_source));
    add(l.post_attention_norm || l.post_ffn_norm, "post-norms");
    add(l.moe(), std::to_string(l.n_expert) + " experts, top " + std::to_string(l.n_expert_used));
    add(l.per_layer_input, "per-layer input");
    add(l.output_scale, "output scale");
    std::printf("layer %-3zu       heads %lld/%lld × %lld, ff %lld, rope %d, scale %g%s%s\n", il, (long long)l.n_head,
                (long long)l.n_head_kv, (long long)l.head_dim, (long long)l.n_ff, l.rope, l.attn_scale,
                features.empty() ? "" : "; ", features.c_str());
  }
  std::printf("weights read per token: %.2f MiB\n", static_cast<double>(model.weight_bytes()) / 1048576.0);
  const Tokenizer& tok = *loaded.tokenizer;
  std::printf("tokenizer:     %s, %d tokens, bos %d, eos %d, add_bos %s\n", tok.model_name().c_str(), tok.n_vocab(),
              tok.bos_id(), tok.eos_id(), tok.add_bos() ? "yes" : "no");
  std::printf("metadata (%zu keys):\n", file.metadata().size());
  for (const auto& [key, value] : file.metadata())
    std::printf("  %-44s %s\n", key.c_str(), value.to_display(options.all_metadata ? 64 : 4).c_str());
  std::printf("tensors (%zu):\n", file.tensors().size());
  for (const TensorInfo& t : file.tensors())
    std::printf("  %-32s %-5s %-20s %10zu bytes\n", t.name.c_str(), ggml_type_name(t.type), t.shape_string().c_str(), t.nbytes);
  return 0;
}

}  // namespace

Runner add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "show a model's architecture, hyper-parameters, tensors and tokenizer");
  options->source.model_path = kDefaultModel;
  cmd->add_option("model", options->source.model_path, "model file");
  cmd->add_option("--tokenizer", options->source.tokenizer_path, "llama2.c tokenizer.bin for a llama2.c checkpoint");
  cmd->add_flag("--all", options->all_metadata, "show more array elements");
  return [options] { return run_inspect(*options); };
}

}  // namespace nucleus::cli
