// nucleus quantize IN.gguf OUT.gguf TYPE [--pure]
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "model/model_quantizer.h"

namespace nucleus::cli {

namespace {
struct QuantizeOptions {
  std::string input, output, type;
  bool pure = false;
  int n_threads = 0;
};
}  // namespace

Runner add_quantize_command(CLI::App& app) {
  auto options = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand("quantize", "rewrite a GGUF model's weight matrices in another type");
  cmd->add_option("input", options->input, "input GGUF")->required();
  cmd->add_option("output", options->output, "output GGUF")->required();
  cmd->add_option("type", options->type, "F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M")->required();
  cmd->add_flag("--pure", options->pure, "every matrix in the one type (no Q6_K output, no mixture)");
  cmd->add_option("-t,--threads", options->n_threads, "threads")->check(CLI::NonNegativeNumber);
  return [options] {
    const QuantizeRecipe recipe = parse_quantize_type(options->type);
    auto input = GgufFile::open(options->input);
    const auto start = std::chrono::steady_clock::now();
    const QuantizeStats stats = quantize_model(*input, options->output, recipe, options->pure,
                                               options->n_threads > 0 ? options->n_threads : default_threads());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "wrote %s: %d tensors converted, %.1f MiB → %.1f MiB in %.1f s\n", options->output.c_str(),
                 stats.tensors_quantized, static_cast<double>(stats.bytes_in) / 1048576.0,
                 static_cast<double>(stats.bytes_out) / 1048576.0, seconds);
    return 0;
  };
}

}  // namespace nucleus::cli
