// nucleus speculate: generate with speculative decoding — a draft model (--draft), prompt lookup
// (--spec ngram) or the target's first K layers (--spec self:K) proposes --gamma tokens per target
// pass. Streams the continuation to stdout like `generate`; stderr gets the acceptance rate α and
// the tokens per target pass. The output follows the target's distribution exactly (greedy: the
// same tokens as `generate --temp 0`).
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "sampling/sampler.h"
#include "spec/draft_model_proposer.h"
#include "spec/ngram_proposer.h"
#include "spec/self_speculation.h"
#include "spec/speculative_generator.h"

namespace nucleus::cli {

namespace {

struct SpeculateOptions {
  ModelSource source;
  std::string draft_path;
  std::string spec;  // "ngram" or "self:K"
  int32_t gamma = 4;
  std::string prompt;
  int n_predict = 128;
  int n_threads = 0;
  int64_t n_ctx = 0;
  SamplingParams sampling;
  uint64_t seed = 0;
  bool seed_given = false;
};

void write(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int run_speculate(SpeculateOptions options) {
  if (options.draft_path.empty() == options.spec.empty())
    throw Error("speculate: give exactly one of --draft MODEL and --spec ngram|self:K");
  int64_t self_layers = 0;
  if (!options.spec.empty() && options.spec != "ngram") {
    size_t used = 0;
    try {
      if (options.spec.rfind("self:", 0) != 0) throw std::invalid_argument(options.spec);
      self_layers = std::stoll(options.spec.substr(5), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != options.spec.size() - 5)
      throw Error("--spec: expected ngram or self:K (K layers), got '" + options.spec + "'");
  }
  validate_sampling_params(options.sampling);
  if (options.seed_given) options.sampling.seed = options.seed;
  if (!options.sampling.seed) options.sampling.seed = random_seed();

  LoadedModel target = load_model(options.source);
  const Tokenizer& tokenizer = *target.tokenizer;
  const int n_threads = options.n_threads > 0 ? options.n_threads : default_threads();
  std::vector<int32_t> prompt = tokenizer.encode(options.prompt, /*add_special=*/true, /*parse_special=*/false);
  if (prompt.empty()) prompt.push_back(tokenizer.bos_id());
  const int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : target.model->hparams().n_ctx_train;
  if (static_cast<int64_t>(prompt.size()) >= n_ctx)
    throw Error("prompt has " + std::to_string(prompt.size()) + " tokens, which does not fit the context length " +
                std::to_string(n_ctx));
  const int64_t budget = std::min<int64_t>(options.n_predict, n_ctx - static_cast<int64_t>(prompt.size()));
  const int64_t n_positions = static_cast<int64_t>(prompt.size()) + budget;

  LoadedModel draft;
  std::unique_ptr<Proposer> proposer;
  if (!options.draft_path.empty()) {
    ModelSource draft_source;
    draft_source.model_path = options.draft_path;
    draft = load_model(draft_source);
    check_same_vocabulary(target.model->file(), draft.model->file(), options.draft_path);
    proposer = std::make_unique<DraftModelProposer>(*draft.model, options.sampling, n_positions + options.gamma, n_threads,
                                                    "draft:" + options.draft_path);
  } else if (options.spec == "ngram") {
    proposer = std::make_unique<NgramProposer>(1, 3);
  } else {
    proposer = std::make_unique<SelfSpeculationProposer>(*target.model, self_layers, options.sampling,
                                                         n_positions + options.gamma, n_threads);
  }

  SpeculativeGenerator generator(*target.model, *proposer, options.sampling, options.gamma, n_positions, n_threads);
  IncrementalDetokenizer detokenizer(tokenizer);
  const auto start = std::chrono::steady_clock::now();
  generator.start(prompt, budget, *options.sampling.seed);
  int64_t n_generated = 0;
  bool ended = false;
  while (!ended && !generator.finished()) {
    for (int32_t token : generator.step()) {
      if (tokenizer.is_end_of_generation(token)) {
        ended = true;
        break;
      }
      ++n_generated;
      write(detokenizer.push(token));
    }
  }
  write(detokenizer.flush() + "\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const SpeculativeStats& stats = generator.stats();
  std::fprintf(stderr,
               "speculative: %s, gamma %d | proposed %lld, accepted %lld, alpha %.3f, tokens per pass %.2f (%lld passes) | "
               "generated %lld, %.1f tok/s, seed %llu\n",
               proposer->name().c_str(), options.gamma, static_cast<long long>(stats.num_proposed),
               static_cast<long long>(stats.num_accepted), stats.acceptance_rate(), stats.tokens_per_pass(),
               static_cast<long long>(stats.num_passes), static_cast<long long>(n_generated),
               static_cast<double>(n_generated) / std::max(seconds, 1e-9),
               static_cast<unsigned long long>(*options.sampling.seed));
  return 0;
}

}  // namespace

Runner add_speculate_command(CLI::App& app) {
  auto options = std::make_shared<SpeculateOptions>();
  CLI::App* cmd = app.add_subcommand("speculate", "generate with speculative decoding (draft model, n-gram or self-speculation)");
  SamplingParams& s = options->sampling;
  add_model_flags(*cmd, options->source);
  cmd->add_option("--draft", options->draft_path, "draft model (GGUF) sharing the target's vocabulary");
  cmd->add_option("--spec", options->spec, "proposer without a file: ngram (prompt lookup) or self:K (first K layers)");
  cmd->add_option("--gamma", options->gamma, "draft tokens per target pass")->check(CLI::PositiveNumber);
  cmd->add_option("-p,--prompt", options->prompt, "prompt text (empty: start from BOS)");
  cmd->add_option("-n,--n-predict", options->n_predict, "maximum tokens to generate")->check(CLI::NonNegativeNumber);
  cmd->add_option("-c,--ctx-size", options->n_ctx, "context length (default: the model's)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-t,--threads", options->n_threads, "threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-s,--seed", options->seed, "random seed (default: random, printed in the summary)")
      ->each([options](const std::string&) { options->seed_given = true; });
  cmd->add_option("--temp", s.temperature, "temperature; 0 = greedy")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens; <= 0 = off");
  cmd->add_option("--top-p", s.top_p, "nucleus sampling mass; 1 = off")->check(CLI::Range(0.0, 1.0));
  return [options] { return run_speculate(*options); };
}

}  // namespace nucleus::cli
