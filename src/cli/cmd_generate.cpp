// nucleus generate: continue a prompt; a summary line on stderr.
//
// Output: with one sequence and no --logprobs, the continuation is streamed to stdout as text (held
// back only while a --stop string could still match) and ended with a newline. Otherwise stdout is
// JSON lines: with --logprobs one line per generated token
//   {"index", "position", "token", "text", "bytes", "logprob", "top_logprobs": [{"token", "text", "bytes", "logprob"}]}
// and, for every sequence at the end,
//   {"index", "text", "finish_reason", "num_tokens"}   (+ "score", "sum_logprobs" for beams).
//
// Modes: one sampled sequence through the batching engine (AsyncEngine, the path the server takes),
// optionally speculative (--draft MODEL | --spec ngram|self:K, --gamma G: same distribution, greedy
// gives the same tokens); with --logprobs, one sequence on a SequenceRunner; --n N samples that
// share the prompt's prefill and KV blocks, sample i drawing with sample_seed(seed, i) (sample 0
// equals the --n 1 run); --beams N beam search over shared, copy-on-write KV blocks
// (SequenceGroupRunner). `nucleus speculate` is another name for `generate`.
//
// Structured output (--json-schema, --grammar, --regex, --choice) holds in every mode: each sequence
// (each sample of --n, each beam) has its own matcher, and its logits are masked before the sampler
// chain or the beam scores see them. --logprobs then reports the masked, renormalized distribution
// (the raw source: log_softmax of the masked logits), as the server does.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/speculation_flags.h"
#include "core/error.h"
#include "engine/async_engine.h"
#include "engine/beam_search_runner.h"
#include "engine/sequence_group_runner.h"
#include "model/sequence_runner.h"
#include "sampling/beam_search.h"
#include "sampling/logprobs.h"
#include "sampling/sampler.h"
#include "sampling/stop_conditions.h"
#include "structured/constraint.h"
#include "structured/token_mask.h"

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
  std::vector<std::string> logit_bias;  // "ID=VALUE"
  std::string sampler_order;
  int n_samples = 1;
  int num_beams = 0;  // 0: no beam search
  BeamSearchParams beams;
  std::string early_stopping = "heuristic";
  StopParams stop;
  LogprobsParams logprobs;
  std::string logprobs_source = "raw";
  SpeculationFlags speculation;
  // Structured output (at most one): --json-schema FILE, --grammar FILE, --regex RE, --choice A,B,C.
  std::string json_schema_file, grammar_file, regex;
  std::vector<std::string> choices;
  std::shared_ptr<const Grammar> grammar;  // compiled from the one given
};

std::string read_text_file(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string(flag) + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The structured-output flag given, compiled; null when none. Errors name the flag.
std::shared_ptr<const Grammar> compile_structured_flags(const GenerateOptions& options) {
  std::vector<std::pair<const char*, ConstraintSpec>> given;
  if (!options.json_schema_file.empty())
    given.push_back({"--json-schema", {ConstraintSpec::Kind::json_schema, read_text_file(options.json_schema_file, "--json-schema"), {}, false}});
  if (!options.grammar_file.empty())
    given.push_back({"--grammar", {ConstraintSpec::Kind::grammar, read_text_file(options.grammar_file, "--grammar"), {}, false}});
  if (!options.regex.empty()) given.push_back({"--regex", {ConstraintSpec::Kind::regex, options.regex, {}, false}});
  if (!options.choices.empty()) given.push_back({"--choice", {ConstraintSpec::Kind::choice, "", options.choices, false}});
  if (given.empty()) return nullptr;
  if (given.size() > 1) throw Error(std::string(given[0].first) + " and " + given[1].first + " cannot be combined");
  ConstraintCompiler compiler;
  try {
    return compiler.compile(given[0].second).grammar;
  } catch (const Error& e) {
    throw Error(std::string(given[0].first) + ": " + e.what());
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void write_json_line(const nlohmann::json& line) {
  // Pieces may be parts of a UTF-8 character: replace rather than throw; "bytes" keeps them exact.
  write(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::vector<int> bytes_of(const std::string& s) {
  std::vector<int> bytes;
  for (unsigned char c : s) bytes.push_back(c);
  return bytes;
}

nlohmann::json logprobs_line(const Tokenizer& tokenizer, int index, int64_t position, const TokenLogprobs& lp) {
  auto entry = [&](const TokenLogprob& t) {
    const std::string piece = tokenizer.token_to_piece(t.token);
    nlohmann::json j = {{"token", t.token}, {"text", piece}, {"bytes", bytes_of(piece)}};
    j["logprob"] = std::isfinite(t.logprob) ? nlohmann::json(t.logprob) : nlohmann::json(nullptr);  // null: −inf
    return j;
  };
  nlohmann::json line = {{"index", index}, {"position", position}};
  line.update(entry(lp.chosen));
  line["top_logprobs"] = nlohmann::json::array();
  for (const TokenLogprob& t : lp.top) line["top_logprobs"].push_back(entry(t));
  return line;
}

// The prompt, context and generation budget shared by every mode.
struct Setup {
  std::vector<int32_t> prompt;
  int64_t n_ctx = 0;
  int64_t budget = 0;  // tokens to generate at most
  int n_threads = 1;
  std::shared_ptr<ConstraintTables> constraint;  // the --n, --beams and --logprobs paths' masks (null: none)
};

struct Timing {
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  int64_t n_generated = 0;
};

// decoded: the tokens produced within decode_seconds (default: all generated).
void print_summary(const Setup& setup, const Timing& timing, uint64_t seed, int64_t decoded = -1) {
  if (decoded < 0) decoded = timing.n_generated;
  std::fprintf(stderr, "prompt tokens: %zu, prefill: %.1f tok/s, generated: %lld, decode: %.1f tok/s, seed: %llu\n",
               setup.prompt.size(), static_cast<double>(setup.prompt.size()) / std::max(timing.prefill_seconds, 1e-9),
               static_cast<long long>(timing.n_generated),
               static_cast<double>(decoded) / std::max(timing.decode_seconds, 1e-9),
               static_cast<unsigned long long>(seed));
}

// One sequence's generation state: its sampler, detokenizer, stop rules and, under structured
// output, its matcher.
struct SampledSequence {
  int index = 0;
  SamplerChain chain;
  IncrementalDetokenizer detokenizer;
  StopChecker stop;
  std::unique_ptr<TokenConstraint> constraint;  // null without structured output
  std::vector<float> masked;                    // [n_vocab] the logits after the constraint's mask
  std::vector<int32_t> tokens;  // prompt + outputs, for the penalties
  std::string text;             // everything emitted
  bool done = false;

  SampledSequence(int index, const SamplingParams& params, const Tokenizer& tokenizer, const StopParams& stop_params,
                  const std::vector<int32_t>& prompt, std::shared_ptr<ConstraintTables> constraint_tables)
      : index(index), chain(params), detokenizer(tokenizer), stop(stop_params), tokens(prompt) {
    if (constraint_tables) constraint = std::make_unique<TokenConstraint>(std::move(constraint_tables));
  }

  // Samples the token at output `position` from `logits` [n_vocab]; returns the text to show now.
  std::string advance(const GenerateOptions& options, const Tokenizer& tokenizer, const float* logits,
                      int64_t n_vocab, int64_t position, int32_t& token) {
    const SamplingContext context{tokens, static_cast<uint64_t>(position)};
    if (constraint) {
      masked.assign(logits, logits + n_vocab);
      constraint->mask_logits(masked.data(), n_vocab);
      logits = masked.data();
    }
    token = chain.sample(logits, n_vocab, context);
    if (constraint && !constraint->accept_token(token)) throw Error("internal: a masked sample broke its grammar");
    const bool end_of_generation = tokenizer.is_end_of_generation(token);
    const bool ends = end_of_generation && !options.stop.ignore_eos && position >= options.stop.min_tokens;
    if (options.logprobs.enabled() && !ends) {
      const TokenLogprobs lp =
          options.logprobs.source == LogprobsSource::raw
              ? logprobs_from_logits(logits, n_vocab, token, options.logprobs.top_logprobs)
              : logprobs_from_candidates(chain.distribution(logits, n_vocab, context), token, options.logprobs.top_logprobs);
      write_json_line(logprobs_line(tokenizer, index, position, lp));
    }
    std::string emitted = stop.on_token(end_of_generation, ends ? std::string() : detokenizer.push(token));
    tokens.push_back(token);
    // A grammar that took its end-of-generation token allows nothing more (--ignore-eos): stop there.
    if (!stop.finished() && constraint && constraint->ended()) emitted += stop.finish(FinishReason::stop);
    if (stop.finished()) {
      done = true;
      if (!stop.stopped_by_stop_string()) emitted += detokenizer.flush();  // an unfinished UTF-8 tail
    }
    text += emitted;
    return emitted;
  }

  std::string finish() {  // the budget ended before the stop rules did (e.g. a zero budget)
    if (done) return "";
    done = true;
    std::string emitted = stop.finish(FinishReason::length) + detokenizer.flush();
    text += emitted;
    return emitted;
  }

  int64_t n_generated() const { return stop.n_tokens() - (stop.stopped_by_end_of_generation() ? 1 : 0); }

  nlohmann::json result_line() const {
    return {{"index", index}, {"text", text}, {"finish_reason", finish_reason_name(stop.finish_reason())},
            {"num_tokens", n_generated()}};
  }
};

SamplingParams sampling_params_for(const GenerateOptions& options, const Tokenizer& tokenizer) {
  SamplingParams params = options.sampling;
  if (options.seed_given) params.seed = options.seed;
  if (!params.seed) params.seed = random_seed();
  params.min_tokens = options.stop.min_tokens;
  params.end_of_generation_ids = tokenizer.end_of_generation_ids();
  return params;
}

int run_single(const GenerateOptions& options, Model& model, const Tokenizer& tokenizer, const Setup& setup) {
  const SamplingParams params = sampling_params_for(options, tokenizer);
  const bool json = options.logprobs.enabled();
  SequenceRunner runner(model, static_cast<int64_t>(setup.prompt.size()) + std::max<int64_t>(setup.budget, 1),
                        setup.n_threads);
  SampledSequence sequence(0, params, tokenizer, options.stop, setup.prompt, setup.constraint);
  const int64_t n_vocab = model.hparams().n_vocab;

  Timing timing;
  const auto prefill_start = std::chrono::steady_clock::now();
  const std::vector<float>* logits = &runner.feed(setup.prompt);
  timing.prefill_seconds = seconds_since(prefill_start);

  const auto decode_start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < setup.budget && !sequence.done; ++i) {
    int32_t token = 0;
    const std::string text = sequence.advance(options, tokenizer, logits->data(), n_vocab, i, token);
    if (!json) write(text);
    if (!sequence.done && i + 1 < setup.budget) logits = &runner.feed({token});
  }
  const std::string tail = sequence.finish();
  if (json) {
    write_json_line(sequence.result_line());
  } else {
    write(tail + "\n");
  }
  timing.decode_seconds = seconds_since(decode_start);
  timing.n_generated = sequence.n_generated();
  print_summary(setup, timing, sequence.chain.seed());
  return 0;
}

// One sequence through the batching engine; speculative when --draft or --spec is given.
int run_on_engine(const GenerateOptions& options, const LoadedModel& loaded, const Setup& setup) {
  Model& model = *loaded.model;
  const Tokenizer& tokenizer = *loaded.tokenizer;
  RequestOptions request;
  request.sampling = sampling_params_for(options, tokenizer);
  request.stop = options.stop;
  request.grammar = options.grammar;
  const auto n_prompt = static_cast<int64_t>(setup.prompt.size());
  std::unique_ptr<ProposerFactory> proposers;
  if (options.speculation.enabled()) {
    proposers = std::make_unique<ProposerFactory>(options.speculation, loaded);
    request.num_speculative_tokens = options.speculation.gamma;
    request.proposer = proposers->make(request.sampling, setup.n_threads);
  }
  EngineConfig config;
  config.block_size = 16;
  config.num_blocks = (n_prompt + setup.budget + request.num_speculative_tokens) / config.block_size + 2;
  config.max_model_len = setup.n_ctx;
  config.max_num_batched_tokens = std::max<int64_t>(512, n_prompt + request.num_speculative_tokens + 1);
  config.max_num_seqs = 1;
  config.enable_prefix_caching = false;
  config.n_threads = setup.n_threads;
  config.check_memory = options.source.check_memory;
  AsyncEngine engine(std::make_unique<LLMEngine>(model, &tokenizer, config));

  // Timing from the engine's own timestamps: its loop thread may run ahead of this reader.
  Timing timing;
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<RequestStream> stream = engine.submit(setup.prompt, request);
  RequestOutput out, last;
  std::chrono::steady_clock::time_point first_token_at{};
  int64_t first_token_count = 0;
  while (stream->next(out)) {
    if (!out.error.empty()) throw Error(out.error);
    if (first_token_count == 0 && !out.new_tokens.empty()) {  // the prompt's pass ends with the first token(s)
      first_token_at = out.produced_at;
      first_token_count = out.num_output_tokens;
    }
    write(out.text);
    if (!out.new_tokens.empty()) last = out;
  }
  write("\n");
  if (first_token_count > 0) {
    timing.prefill_seconds = std::chrono::duration<double>(first_token_at - start).count();
    timing.decode_seconds = std::chrono::duration<double>(last.produced_at - first_token_at).count();
  }
  // Decode speed counts the tokens after the first pass over the time after it.
  timing.n_generated = last.num_output_tokens;
  if (!last.new_tokens.empty() && tokenizer.is_end_of_generation(last.new_tokens.back()) && !options.stop.ignore_eos)
    --timing.n_generated;
  const int64_t decoded = std::max<int64_t>(0, last.num_output_tokens - first_token_count);
  print_summary(setup, timing, last.seed ? last.seed : *request.sampling.seed, decoded);
  if (proposers) {
    const SpeculativeStats& spec = last.spec;
    std::fprintf(stderr, "speculative: %s, gamma %d | proposed %lld, accepted %lld, alpha %.3f, tokens per pass %.2f (%lld passes)\n",
                 proposers->describe().c_str(), options.speculation.gamma, static_cast<long long>(spec.num_proposed),
                 static_cast<long long>(spec.num_accepted), spec.acceptance_rate(), spec.tokens_per_pass(),
                 static_cast<long long>(spec.num_passes));
  }
  return 0;
}

int run_samples(const GenerateOptions& options, Model& model, const Tokenizer& tokenizer, const Setup& setup) {
  const SamplingParams params = sampling_params_for(options, tokenizer);
  const int n = options.n_samples;
  const int64_t n_vocab = model.hparams().n_vocab;
  SequenceGroupRunner group(model, SequenceGroupRunner::blocks_needed(static_cast<int64_t>(setup.prompt.size()), setup.budget, n, 16),
                            static_cast<int64_t>(setup.prompt.size()) + setup.budget, setup.n_threads);

  Timing timing;
  const auto prefill_start = std::chrono::steady_clock::now();
  const SequenceGroupRunner::SequenceId root = group.prefill(setup.prompt);
  timing.prefill_seconds = seconds_since(prefill_start);

  std::vector<std::unique_ptr<SampledSequence>> samples;
  std::vector<SequenceGroupRunner::SequenceId> ids;
  for (int i = 0; i < n; ++i) {
    SamplingParams own = params;
    own.seed = sample_seed(*params.seed, static_cast<uint64_t>(i));
    samples.push_back(std::make_unique<SampledSequence>(i, own, tokenizer, options.stop, setup.prompt, setup.constraint));
    ids.push_back(group.fork(root));
  }
  group.release(root);

  const auto decode_start = std::chrono::steady_clock::now();
  std::vector<float> logits(group.logits());  // [n, n_vocab]: every sample starts from the prompt's row
  logits.resize(static_cast<size_t>(n) * static_cast<size_t>(n_vocab));
  for (int i = 1; i < n; ++i) std::copy_n(logits.begin(), n_vocab, logits.begin() + i * n_vocab);
  std::vector<size_t> row_of(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) row_of[static_cast<size_t>(i)] = static_cast<size_t>(i);

  for (int64_t position = 0; position < setup.budget; ++position) {
    std::vector<SequenceGroupRunner::SequenceId> step_ids;
    std::vector<int32_t> step_tokens;
    std::vector<size_t> stepping;  // sample indices, in step order
    for (size_t s = 0; s < samples.size(); ++s) {
      SampledSequence& sample = *samples[s];
      if (sample.done) continue;
      int32_t token = 0;
      sample.advance(options, tokenizer, logits.data() + row_of[s] * static_cast<size_t>(n_vocab), n_vocab, position, token);
      if (sample.done) {
        group.release(ids[s]);
      } else if (position + 1 < setup.budget) {
        step_ids.push_back(ids[s]);
        step_tokens.push_back(token);
        stepping.push_back(s);
      }
    }
    if (step_ids.empty()) break;
    logits = group.step(step_ids, step_tokens);
    for (size_t r = 0; r < stepping.size(); ++r) row_of[stepping[r]] = r;
  }
  for (auto& sample : samples) {
    sample->finish();
    timing.n_generated += sample->n_generated();
  }
  timing.decode_seconds = seconds_since(decode_start);
  for (const auto& sample : samples) write_json_line(sample->result_line());
  print_summary(setup, timing, *params.seed);
  return 0;
}

int run_beams(const GenerateOptions& options, Model& model, const Tokenizer& tokenizer, const Setup& setup) {
  BeamSearchParams params = options.beams;
  params.max_new_tokens = static_cast<int32_t>(setup.budget);
  params.min_new_tokens = options.stop.min_tokens;
  if (!options.stop.ignore_eos) params.end_of_generation_ids = tokenizer.end_of_generation_ids();
  Timing timing;
  BeamSearchTiming beam_timing;
  const std::vector<BeamHypothesis> results =
      run_beam_search(model, setup.prompt, params, setup.n_threads, &beam_timing, setup.constraint);
  timing.prefill_seconds = beam_timing.prefill_seconds;
  timing.decode_seconds = beam_timing.decode_seconds;

  // Stop strings and min_tokens cut the returned text; they do not steer the search.
  const bool json = params.num_return_sequences > 1;
  for (size_t i = 0; i < results.size(); ++i) {
    const BeamHypothesis& h = results[i];
    StopChecker stop(StopParams{params.max_new_tokens, options.stop.min_tokens, options.stop.stop, options.stop.ignore_eos});
    IncrementalDetokenizer detokenizer(tokenizer);
    std::string text;
    for (int32_t token : h.tokens) {
      if (stop.finished()) break;
      const bool end_of_generation = tokenizer.is_end_of_generation(token);
      const bool ends = end_of_generation && !options.stop.ignore_eos;
      text += stop.on_token(end_of_generation, ends ? std::string() : detokenizer.push(token));
    }
    if (!stop.stopped_by_stop_string()) text += stop.finish(FinishReason::length) + detokenizer.flush();
    timing.n_generated += static_cast<int64_t>(h.tokens.size()) - (h.ended_by_end_of_generation ? 1 : 0);
    if (json) {
      write_json_line({{"index", i}, {"text", text}, {"finish_reason", finish_reason_name(stop.finish_reason())},
                       {"num_tokens", stop.n_tokens() - (stop.stopped_by_end_of_generation() ? 1 : 0)},
                       {"score", h.score}, {"sum_logprobs", h.sum_logprobs}});
    } else {
      write(text + "\n");
    }
  }
  if (results.empty() && !json) write("\n");
  print_summary(setup, timing, options.seed);  // beam search draws nothing: the seed is only echoed
  return 0;
}

int run_generate(GenerateOptions options) {
  // Flags that need parsing or cross-checks, before the model is loaded.
  for (const std::string& entry : options.logit_bias) {
    const size_t eq = entry.find('=');
    size_t used_id = 0, used_value = 0;
    int32_t id = -1;
    float value = 0.0f;
    try {
      if (eq == std::string::npos) throw std::invalid_argument(entry);
      id = std::stoi(entry.substr(0, eq), &used_id);
      value = std::stof(entry.substr(eq + 1), &used_value);
    } catch (const std::exception&) {
      used_id = 0;
    }
    if (eq == std::string::npos || used_id != eq || used_value != entry.size() - eq - 1)
      throw Error("--logit-bias: expected ID=VALUE (e.g. 13=-inf), got '" + entry + "'");
    options.sampling.logit_bias.emplace_back(id, value);
  }
  if (!options.sampler_order.empty()) options.sampling.order = parse_sampler_order(options.sampler_order);
  if (options.early_stopping == "heuristic" || options.early_stopping == "false") {
    options.beams.early_stopping = EarlyStopping::heuristic;
  } else if (options.early_stopping == "true" || options.early_stopping == "immediately") {
    options.beams.early_stopping = EarlyStopping::immediately;
  } else if (options.early_stopping == "never") {
    options.beams.early_stopping = EarlyStopping::never;
  } else {
    throw Error("--early-stopping: expected true, false or never, got '" + options.early_stopping + "'");
  }
  if (options.logprobs_source == "raw") options.logprobs.source = LogprobsSource::raw;
  else if (options.logprobs_source == "processed") options.logprobs.source = LogprobsSource::processed;
  else throw Error("--logprobs-source: expected raw or processed, got '" + options.logprobs_source + "'");
  const bool beam_mode = options.num_beams > 0;
  options.beams.num_beams = std::max(options.num_beams, 1);
  if (beam_mode && options.n_samples > 1) throw Error("--n and --beams cannot be combined");
  if (beam_mode && options.logprobs.enabled()) throw Error("--logprobs is not available with --beams");
  if (beam_mode && (options.beams.num_return_sequences < 1 || options.beams.num_return_sequences > options.beams.num_beams))
    throw Error("--num-return-sequences must be between 1 and --beams");
  if (options.stop.min_tokens > options.n_predict) throw Error("--min-tokens exceeds -n");
  if (options.speculation.enabled() && (beam_mode || options.n_samples > 1 || options.logprobs.enabled()))
    throw Error("speculative decoding (--draft/--spec) runs one sequence: it cannot be combined with --n, --beams or --logprobs");
  validate_sampling_params(options.sampling);
  options.grammar = compile_structured_flags(options);

  ModelSource source = options.source;
  source.n_ctx = options.n_ctx;  // the context the model is loaded for (Phi-3 picks its rope factors by it)
  LoadedModel loaded = load_model(source);
  Model& model = *loaded.model;
  const Tokenizer& tokenizer = *loaded.tokenizer;
  for (const auto& [id, value] : options.sampling.logit_bias)
    if (id >= model.hparams().n_vocab)
      throw Error("--logit-bias: token id " + std::to_string(id) + " is out of range (vocabulary size " +
                  std::to_string(model.hparams().n_vocab) + ")");

  Setup setup;
  setup.n_threads = options.n_threads > 0 ? options.n_threads : default_threads();
  setup.prompt = tokenizer.encode(options.prompt, /*add_special=*/true, /*parse_special=*/false);
  if (setup.prompt.empty()) setup.prompt.push_back(tokenizer.bos_id());
  setup.n_ctx = options.n_ctx > 0 ? options.n_ctx : model.hparams().n_ctx_train;
  if (static_cast<int64_t>(setup.prompt.size()) >= setup.n_ctx)
    throw Error("prompt has " + std::to_string(setup.prompt.size()) +
                " tokens, which does not fit the context length " + std::to_string(setup.n_ctx));
  setup.budget = std::min<int64_t>(options.n_predict, setup.n_ctx - static_cast<int64_t>(setup.prompt.size()));
  options.stop.max_tokens = static_cast<int32_t>(setup.budget);

  if (options.grammar && (beam_mode || options.n_samples > 1 || options.logprobs.enabled()))
    setup.constraint = std::make_shared<ConstraintTables>(options.grammar, std::make_shared<const VocabularyTrie>(tokenizer));
  if (beam_mode) return run_beams(options, model, tokenizer, setup);
  if (options.n_samples > 1) return run_samples(options, model, tokenizer, setup);
  if (options.logprobs.enabled()) return run_single(options, model, tokenizer, setup);
  return run_on_engine(options, loaded, setup);
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "generate text from a prompt");
  cmd->alias("speculate");
  SamplingParams& s = options->sampling;
  add_model_flags(*cmd, options->source);
  cmd->add_option("-p,--prompt", options->prompt, "prompt text (empty: start from BOS)");
  cmd->add_option("-n,--n-predict", options->n_predict, "maximum tokens to generate")->check(CLI::NonNegativeNumber);
  cmd->add_option("-c,--ctx-size", options->n_ctx, "context length (default: the model's)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-t,--threads", options->n_threads, "threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-s,--seed", options->seed, "random seed (default: random, printed in the summary)")
      ->each([options](const std::string&) { options->seed_given = true; });

  // Sampler chain (sampling/sampler.h documents each stage).
  cmd->add_option("--temp", s.temperature, "temperature; 0 = greedy")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens; <= 0 = off");
  cmd->add_option("--top-p", s.top_p, "nucleus sampling mass; 1 = off")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", s.min_p, "drop tokens below min_p * p_max; 0 = off")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--typical-p", s.typical_p, "locally typical sampling mass; 1 = off")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", s.repetition_penalty, "repetition penalty (llama.cpp/HF); 1 = off")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repeat-last-n", s.penalty_last_n, "penalty window over prompt + output; -1 = all, 0 = off")
      ->check(CLI::Range(-1, 1 << 30));
  cmd->add_option("--presence-penalty", s.presence_penalty, "OpenAI presence penalty; 0 = off");
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "OpenAI frequency penalty; 0 = off");
  cmd->add_option("--logit-bias", options->logit_bias, "add VALUE to token ID's logit (ID=VALUE, -inf bans); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--samplers", options->sampler_order,
                  "stage order; stages left out do not run, e.g. penalties,top_k,top_p,min_p,temperature (default: " +
                      format_sampler_order(default_sampler_order()) + ")");

  // Several sequences.
  cmd->add_option("--n", options->n_samples, "number of samples sharing the prompt's prefill")->check(CLI::PositiveNumber);
  cmd->add_option("--beams", options->num_beams, "beam search with N beams (deterministic: sampling flags are ignored)")->check(CLI::PositiveNumber);
  cmd->add_option("--length-penalty", options->beams.length_penalty, "beam score = sum logprob / length^penalty");
  cmd->add_option("--early-stopping", options->early_stopping, "beam search stop rule: true, false (default) or never")
      ->expected(0, 1)
      ->default_str("true");
  cmd->add_option("--num-return-sequences", options->beams.num_return_sequences, "beams to return (<= --beams)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--no-repeat-ngram-size", options->beams.no_repeat_ngram_size, "beam search: ban repeated n-grams")
      ->check(CLI::NonNegativeNumber);

  add_speculation_flags(*cmd, options->speculation);

  // Stop conditions and logprobs.
  cmd->add_option("--stop", options->stop.stop, "stop string, never printed; repeatable")->allow_extra_args(false);
  cmd->add_option("--min-tokens", options->stop.min_tokens, "generate at least this many tokens")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--ignore-eos", options->stop.ignore_eos, "do not stop at end-of-generation tokens");
  cmd->add_option("--json-schema", options->json_schema_file, "constrain the output to JSON valid under this schema file");
  cmd->add_option("--grammar", options->grammar_file, "constrain the output to this GBNF grammar file (llama.cpp's format)");
  cmd->add_option("--regex", options->regex, "constrain the whole output to match this regular expression");
  cmd->add_option("--choice", options->choices, "the output is exactly one of these strings (comma-separated)")->delimiter(',');
  cmd->add_option("--logprobs", options->logprobs.top_logprobs, "print JSON lines with each token's logprob and K alternatives")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--logprobs-source", options->logprobs_source, "raw (model, default) or processed (after the chain)");
  return [options] { return run_generate(*options); };
}

}  // namespace nucleus::cli
