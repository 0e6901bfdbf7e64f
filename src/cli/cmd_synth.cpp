// nucleus synth -o OUT.gguf --vocab VOCAB.gguf --dim D --layers L --heads H --kv-heads K --ffn F
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "model/synthetic_model.h"

namespace nucleus::cli {

namespace {
struct SynthOptions {
  SyntheticModelSpec spec;
  std::string output, type = "F16", chat_template_path;
  std::vector<std::string> renamed_tokens;  // ID=TEXT
  std::vector<std::string> control_tokens;  // ID=TEXT
  int n_threads = 0;
};
}  // namespace

Runner add_synth_command(CLI::App& app) {
  auto options = std::make_shared<SynthOptions>();
  SyntheticModelSpec& spec = options->spec;
  CLI::App* cmd = app.add_subcommand("synth", "write a model of any shape with random weights and a real tokenizer");
  cmd->add_option("-o,--output", options->output, "output GGUF")->required();
  cmd->add_option("--vocab", spec.vocab_path, "GGUF whose tokenizer to use")->required();
  cmd->add_option("--dim", spec.dim, "model width")->check(CLI::PositiveNumber);
  cmd->add_option("--layers", spec.layers, "blocks")->check(CLI::PositiveNumber);
  cmd->add_option("--heads", spec.heads, "query heads")->check(CLI::PositiveNumber);
  cmd->add_option("--kv-heads", spec.kv_heads, "key/value heads")->check(CLI::PositiveNumber);
  cmd->add_option("--ffn", spec.ffn, "feed-forward width")->check(CLI::PositiveNumber);
  cmd->add_option("--ctx", spec.context_length, "context length")->check(CLI::PositiveNumber);
  cmd->add_option("--arch", spec.arch, "llama, qwen2, qwen3, qwen3moe, phi3, gemma2, gemma3, gemma4 or qwen35 (hybrid: every 4th layer attention, the rest gated delta-net)");
  cmd->add_option("--experts", spec.experts, "llama (Mixtral-style) or qwen3moe: an MoE FFN of this many experts")->check(CLI::NonNegativeNumber);
  cmd->add_option("--experts-used", spec.experts_used, "experts per token (top-k)")->check(CLI::PositiveNumber);
  cmd->add_option("--window", spec.window, "gemma2/3/4: sliding window of the local layers")->check(CLI::PositiveNumber);
  cmd->add_option("--head-dim", spec.head_dim, "qwen35: attention head size (default dim / heads)")->check(CLI::PositiveNumber);
  cmd->add_option("--ssm-k-heads", spec.ssm_k_heads, "qwen35: delta-net key heads (default --kv-heads)")->check(CLI::PositiveNumber);
  cmd->add_option("--ssm-v-heads", spec.ssm_v_heads, "qwen35: delta-net value heads (default --heads)")->check(CLI::PositiveNumber);
  cmd->add_option("--ssm-state", spec.ssm_state, "qwen35: delta-net head size (default dim / heads)")->check(CLI::PositiveNumber);
  cmd->add_option("--type", options->type, "weight type (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
  cmd->add_option("--seed", spec.seed, "random seed");
  cmd->add_option("--token", options->renamed_tokens,
                  "ID=TEXT: rename a user-defined or unused vocabulary entry (e.g. 151657=<tool_call> in Qwen's padding slots); repeatable");
  cmd->add_option("--control-token", options->control_tokens,
                  "ID=TEXT: as --token, and the entry becomes a control token (as Mistral's [TOOL_CALLS] is); repeatable");
  cmd->add_option("--chat-template", options->chat_template_path,
                  "Jinja file to store as tokenizer.chat_template (default: the vocabulary's)");
  cmd->add_option("-t,--threads", options->n_threads, "threads")->check(CLI::NonNegativeNumber);
  return [options] {
    auto type = ggml_type_from_name(options->type);
    if (!type) throw Error("synth: unknown --type '" + options->type + "'");
    options->spec.type = *type;
    std::vector<std::pair<std::string, bool>> entries;
    for (const std::string& e : options->renamed_tokens) entries.emplace_back(e, false);
    for (const std::string& e : options->control_tokens) entries.emplace_back(e, true);
    for (const auto& [entry, control] : entries) {
      const size_t eq = entry.find('=');
      size_t used = 0;
      int64_t id = -1;
      try {
        id = eq == std::string::npos ? -1 : std::stoll(entry.substr(0, eq), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (eq == std::string::npos || used != eq || eq + 1 == entry.size())
        throw Error("synth: --token wants ID=TEXT, got '" + entry + "'");
      options->spec.renamed_tokens.push_back({id, entry.substr(eq + 1), control});
    }
    if (!options->chat_template_path.empty()) {
      std::ifstream in(options->chat_template_path, std::ios::binary);
      if (!in) throw Error("synth: cannot read --chat-template " + options->chat_template_path);
      options->spec.chat_template.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    write_synthetic_model(options->spec, options->output, options->n_threads > 0 ? options->n_threads : default_threads());
    std::fprintf(stderr, "wrote %s\n", options->output.c_str());
    return 0;
  };
}

}  // namespace nucleus::cli
