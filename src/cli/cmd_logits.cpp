// nucleus logits: feed token ids as one sequence; one JSON line per position with the top K.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "model/sequence_runner.h"

namespace nucleus::cli {

namespace {

struct LogitsOptions {
  ModelSource source;
  std::string tokens;
  int top = 8;
  int n_threads = 0;
};

std::vector<int32_t> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument("range");
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      throw Error("--tokens: '" + item + "' is not a token id");
    }
  }
  if (ids.empty()) throw Error("--tokens: no token ids given");
  return ids;
}

int run_logits(const LogitsOptions& options) {
  const std::vector<int32_t> tokens = parse_token_list(options.tokens);
  LoadedModel loaded = load_model(options.source);
  Model& model = *loaded.model;
  if (static_cast<int64_t>(tokens.size()) > model.hparams().n_ctx_train)
    throw Error(std::to_string(tokens.size()) + " tokens exceed the context length " + std::to_string(model.hparams().n_ctx_train));
  SequenceRunner runner(model, static_cast<int64_t>(tokens.size()), options.n_threads > 0 ? options.n_threads : default_threads());
  const std::vector<float>& logits = runner.feed(tokens, /*all_logits=*/true);
  const int64_t n_vocab = model.hparams().n_vocab;
  const int64_t k = std::min<int64_t>(std::max(options.top, 1), n_vocab);
  std::vector<int32_t> order(static_cast<size_t>(n_vocab));
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    const float* row = logits.data() + pos * static_cast<size_t>(n_vocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [row](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    nlohmann::json top = nlohmann::json::array();
    for (int64_t i = 0; i < k; ++i) top.push_back({order[static_cast<size_t>(i)], row[order[static_cast<size_t>(i)]]});
    std::printf("%s\n", nlohmann::json{{"pos", pos}, {"top", top}}.dump().c_str());
  }
  return 0;
}

}  // namespace

Runner add_logits_command(CLI::App& app) {
  auto options = std::make_shared<LogitsOptions>();
  CLI::App* cmd = app.add_subcommand("logits", "print the top logits at every position of a token sequence");
  add_model_flags(*cmd, options->source);
  cmd->add_option("--tokens", options->tokens, "comma-separated token ids")->required();
  cmd->add_option("--top", options->top, "how many of the highest logits to print")->check(CLI::PositiveNumber);
  cmd->add_option("-t,--threads", options->n_threads, "threads")->check(CLI::NonNegativeNumber);
  cmd->add_option("-c,--ctx-size", options->source.n_ctx, "the context the model is loaded for (default: its own; Phi-3 picks its rope factors by it)")
      ->check(CLI::NonNegativeNumber);
  return [options] { return run_logits(*options); };
}

}  // namespace nucleus::cli
