// nucleus: command-line entry point. Every failure ends in one line on stderr and a
// non-zero exit status.
#include <cstdio>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

namespace nucleus::cli {

void add_model_flags(CLI::App& command, ModelSource& source) {
  source.model_path = kDefaultModel;
  command.add_option("-m,--model", source.model_path, "model file: GGUF, or a llama2.c checkpoint (with --tokenizer)");
  command.add_option("--tokenizer", source.tokenizer_path, "llama2.c tokenizer.bin for a llama2.c checkpoint");
  command.add_option("--tokenizer-pre", source.tokenizer_options.pre_override,
                     "override the GGUF's tokenizer.ggml.pre pre-tokenizer name");
  command.add_flag("--mmap", source.run_from_mapping,
                   "run the weights from the file mapping: no repacked or huge-page copies (less memory, slower decode)");
  command.add_flag("!--no-memory-check", source.check_memory,
                   "load a model (and allocate its KV cache) even when it needs more memory than is available: "
                   "the weights are then paged in from the file on every token");
}

int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace nucleus::cli

int main(int argc, char** argv) {
  using namespace nucleus::cli;
  CLI::App app{"nucleus: an LLM inference engine"};
  app.require_subcommand(1);
  // Each add_* registers one subcommand; runners[i] belongs to the i-th registered subcommand.
  std::vector<Runner> runners = {add_generate_command(app), add_logits_command(app), add_tokenize_command(app),
                                 add_inspect_command(app), add_convert_command(app),  add_quantize_command(app),
                                 add_synth_command(app),    add_bench_command(app),
                                 add_chat_command(app),
                                 add_serve_command(app)};
  const std::vector<CLI::App*> subcommands = app.get_subcommands([](CLI::App*) { return true; });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    for (size_t i = 0; i < subcommands.size() && i < runners.size(); ++i)
      if (subcommands[i]->parsed()) return runners[i]();
  } catch (const nucleus::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 1;
}
