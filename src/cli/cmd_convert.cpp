// nucleus convert: a llama2.c checkpoint + tokenizer → GGUF.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "io/llama2c.h"

namespace nucleus::cli {

namespace {
struct ConvertOptions {
  std::string checkpoint, tokenizer, output;
};
}  // namespace

Runner add_convert_command(CLI::App& app) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "convert a llama2.c checkpoint and tokenizer to GGUF");
  cmd->add_option("checkpoint", options->checkpoint, "llama2.c model .bin")->required();
  cmd->add_option("tokenizer", options->tokenizer, "llama2.c tokenizer .bin")->required();
  cmd->add_option("-o,--output", options->output, "output GGUF path")->required();
  return [options] {
    const std::vector<uint8_t> bytes = convert_llama2c_to_gguf(options->checkpoint, options->tokenizer);
    FILE* f = std::fopen(options->output.c_str(), "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0)
      throw Error(options->output + ": cannot write");
    std::fprintf(stderr, "wrote %s (%zu bytes)\n", options->output.c_str(), bytes.size());
    return 0;
  };
}

}  // namespace nucleus::cli
