// nucleus tokenize: text → ids as a JSON array; --cases runs llama.cpp's test-case format.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"

namespace nucleus::cli {

namespace {

struct TokenizeOptions {
  ModelSource source;
  std::string text;
  std::string file;
  std::string cases;
  bool no_special = false;
  bool parse_special = false;
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_tokenize(const TokenizeOptions& options) {
  std::unique_ptr<GgufFile> file = open_model_file(options.source);
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(*file, options.source.tokenizer_options);
  if (!options.cases.empty()) {
    const std::string out = format_token_cases(*tokenizer, read_whole_file(options.cases));
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  const std::string text = options.file.empty() ? options.text : read_whole_file(options.file);
  const std::vector<int32_t> ids = tokenizer->encode(text, !options.no_special, options.parse_special);
  std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  return 0;
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  add_model_flags(*cmd, options->source);
  cmd->add_option("text", options->text, "text to tokenize");
  cmd->add_option("--file", options->file, "read the text from a file (byte-exact)");
  cmd->add_option("--cases", options->cases, "llama.cpp vocab test cases (.inp); prints .out-format lines");
  cmd->add_flag("--no-special", options->no_special, "do not add BOS/EOS");
  cmd->add_flag("--parse-special", options->parse_special, "recognize special-token text such as <|im_end|>");
  return [options] { return run_tokenize(*options); };
}

}  // namespace nucleus::cli
