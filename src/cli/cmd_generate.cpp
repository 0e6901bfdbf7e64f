// nucleus generate: stream a continuation of a prompt to stdout; a summary line on stderr.
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "engine/sequence_runner.h"
#include "sampling/sampler.h"

namespace nucleus::cli {

namespace {

struct GenerateOptions {
  ModelSource source;
  std::string prompt;
  int n_predict = 128;
  int n_threads = 0;
  int64_t n_ctx = 0;
  SamplingParams sampling;
  uint64_t seed = 0;
  bool seed_given = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run_generate(const GenerateOptions& options) {
  LoadedModel loaded = load_model(options.source);
  Model& model = *loaded.model;
  const Tokenizer& tokenizer = *loaded.tokenizer;
  const int n_threads = options.n_threads > 0 ? options.n_threads : default_threads();

  std::vector<int32_t> prompt = tokenizer.encode(options.prompt, /*add_special=*/true, /*parse_special=*/false);
  if (prompt.empty()) prompt.push_back(tokenizer.bos_id());
  const int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : model.hparams().n_ctx_train;
  if (static_cast<int64_t>(prompt.size()) >= n_ctx)
    throw Error("prompt has " + std::to_string(prompt.size()) + " tokens, which does not fit the context length " +
                std::to_string(n_ctx));
  const int64_t budget = std::min<int64_t>(options.n_predict, n_ctx - static_cast<int64_t>(prompt.size()));
  SequenceRunner runner(model, static_cast<int64_t>(prompt.size()) + std::max<int64_t>(budget, 1), n_threads);

  SamplingParams params = options.sampling;
  if (options.seed_given) params.seed = options.seed;
  SamplerChain sampler(params);
  IncrementalDetokenizer detokenizer(tokenizer);

  const auto prefill_start = std::chrono::steady_clock::now();
  const std::vector<float>* logits = &runner.feed(prompt);
  const double prefill_seconds = seconds_since(prefill_start);

  const auto decode_start = std::chrono::steady_clock::now();
  int64_t n_generated = 0;
  const int64_t n_vocab = model.hparams().n_vocab;
  for (int64_t i = 0; i < budget; ++i) {
    const int32_t token = sampler.sample(logits->data(), n_vocab, static_cast<uint64_t>(i));
    if (tokenizer.is_end_of_generation(token)) break;
    ++n_generated;
    const std::string text = detokenizer.push(token);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (i + 1 < budget) logits = &runner.feed({token});
  }
  const std::string tail = detokenizer.flush();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  const double decode_seconds = seconds_since(decode_start);
  std::fprintf(stderr, "prompt tokens: %zu, prefill: %.1f tok/s, generated: %lld, decode: %.1f tok/s, seed: %llu\n",
               prompt.size(), static_cast<double>(prompt.size()) / std::max(prefill_seconds, 1e-9),
               static_cast<long long>(n_generated),
               static_cast<double>(n_generated) / std::max(decode_seconds, 1e-9),
               static_cast<unsigned long long>(sampler.seed()));
  return 0;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "generate text from a prompt");
  add_model_flags(*cmd, options->source);
  cmd->add_option("-p,--prompt", options->prompt, "prompt text (empty: start from BOS)");
  cmd->add_option("-n,--n-predict", options->n_predict, "maximum tokens to generate")->check(CLI::NonNegativeNumber);
  cmd->add_option("-c,--ctx-size", options->n_ctx, "context length (default: the model's)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-t,--threads", options->n_threads, "threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--temp", options->sampling.temperature, "temperature; 0 = greedy")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", options->sampling.top_k, "keep the k most likely tokens; <= 0 = off");
  cmd->add_option("--top-p", options->sampling.top_p, "nucleus sampling mass; 1 = off")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", options->sampling.min_p, "drop tokens below min_p * p_max; 0 = off")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("-s,--seed", options->seed, "random seed (default: random, printed in the summary)")
      ->each([options](const std::string&) { options->seed_given = true; });
  return [options] { return run_generate(*options); };
}

}  // namespace nucleus::cli
