#include "explain/explainer.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "engine/beam_search_runner.h"
#include "model/sequence_runner.h"
#include "speculative/draft_model_proposer.h"
#include "speculative/ngram_proposer.h"
#include "speculative/self_speculation.h"

namespace nucleus::explain {

namespace {

bool ends_sentence(const std::string& piece) { return piece.find_first_of(".!?\n") != std::string::npos; }

double log_prob_of(const float* logits, int64_t n_vocab, int32_t token) {
  const float max_logit = *std::max_element(logits, logits + n_vocab);
  double sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
  return static_cast<double>(logits[token] - max_logit) - std::log(sum);
}

}  // namespace

Explainer::Explainer(ExplainerConfig config)
    : config_(std::move(config)), batching_(config_.source, std::max(1, config_.n_threads), config_.weights_from) {
  config_.n_threads = std::max(1, config_.n_threads);
  if (config_.weights_from) {
    loaded_.model = config_.weights_from->share_weights();
    loaded_.tokenizer = Tokenizer::from_gguf(loaded_.model->file(), config_.source.tokenizer_options);
  } else {
    loaded_ = load_model(config_.source);
  }
  if (config_.draft_weights_from) {
    draft_ = config_.draft_weights_from->share_weights();
  } else if (!config_.draft_path.empty()) {
    ModelSource draft_source;
    draft_source.model_path = config_.draft_path;
    draft_ = std::move(load_model(draft_source).model);
  }
  if (draft_) check_same_vocabulary(loaded_.model->file(), draft_->file(), config_.draft_path);
}

Explainer::~Explainer() = default;

std::string Explainer::default_context() const {
  std::string path = config_.source.model_path;
  std::transform(path.begin(), path.end(), path.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return path.find("stories") != std::string::npos ? "Once upon a time" : "The";
}

std::vector<int32_t> Explainer::encode(const std::string& context, int64_t extra_positions) const {
  std::vector<int32_t> tokens = tokenizer().encode(context, /*add_special=*/true, /*parse_special=*/false);
  if (tokens.empty()) {
    if (tokenizer().bos_id() < 0) throw Error("the context is empty and the model has no BOS token to start from");
    tokens.push_back(tokenizer().bos_id());
  }
  const int64_t n_ctx = hparams().n_ctx_train;
  if (static_cast<int64_t>(tokens.size()) + extra_positions > n_ctx)
    throw Error("the context has " + std::to_string(tokens.size()) + " tokens; with " + std::to_string(extra_positions) +
                " more it exceeds the model's context length of " + std::to_string(n_ctx));
  return tokens;
}

const std::vector<float>& Explainer::logits_for(const std::vector<int32_t>& tokens) {
  if (tokens != cached_tokens_ || cached_logits_.empty()) {
    SequenceRunner runner(*loaded_.model, static_cast<int64_t>(tokens.size()), config_.n_threads);
    cached_logits_ = runner.feed(tokens);
    cached_tokens_ = tokens;
  }
  return cached_logits_;
}

NextTokenDistribution Explainer::distribution(const std::string& context, const SamplingParams& params, int64_t top_n) {
  const std::vector<int32_t> tokens = encode(context, 0);
  std::lock_guard<std::mutex> lock(mutex_);
  return next_token_distribution(logits_for(tokens).data(), hparams().n_vocab, params, tokens, tokenizer(), top_n);
}

SampledToken Explainer::sample(const std::string& context, SamplingParams params) {
  std::vector<int32_t> tokens = encode(context, 1);
  if (!params.seed) params.seed = random_seed();
  std::lock_guard<std::mutex> lock(mutex_);
  SamplerChain chain(params);
  SampledToken result;
  result.seed = *params.seed;
  result.id = chain.sample(logits_for(tokens).data(), hparams().n_vocab, SamplingContext{tokens, 0});
  result.text = tokenizer().token_to_piece(result.id);
  tokens.push_back(result.id);
  result.context = tokenizer().decode(tokens, false, /*strip_space_prefix=*/true);
  return result;
}

Continuation Explainer::resample(const std::string& context, SamplingParams params, int64_t max_tokens) {
  std::vector<int32_t> sequence = encode(context, max_tokens);
  if (!params.seed) params.seed = random_seed();
  std::lock_guard<std::mutex> lock(mutex_);
  SamplerChain chain(params);
  SequenceRunner runner(*loaded_.model, static_cast<int64_t>(sequence.size()) + max_tokens, config_.n_threads);
  const int64_t n_vocab = hparams().n_vocab;
  Continuation result;
  result.seed = *params.seed;
  IncrementalDetokenizer detokenizer(tokenizer());
  std::vector<float> logits = runner.feed(sequence);
  for (int64_t position = 0; position < max_tokens; ++position) {
    const int32_t token = chain.sample(logits.data(), n_vocab, SamplingContext{sequence, static_cast<uint64_t>(position)});
    result.score += log_prob_of(logits.data(), n_vocab, token);
    if (tokenizer().is_end_of_generation(token)) break;
    result.tokens.push_back(token);
    sequence.push_back(token);
    result.text += detokenizer.push(token);
    if (ends_sentence(tokenizer().token_to_piece(token)) || position + 1 == max_tokens) break;
    logits = runner.feed({token});
  }
  result.text += detokenizer.flush();
  return result;
}

Continuation Explainer::greedy(const std::string& context, int64_t max_tokens) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.seed = 0;
  return resample(context, params, max_tokens);
}

std::vector<Continuation> Explainer::beams(const std::string& context, int32_t num_beams, int64_t max_tokens) {
  const std::vector<int32_t> prompt = encode(context, max_tokens);
  BeamSearchParams params;
  params.num_beams = num_beams;
  params.num_return_sequences = num_beams;
  params.max_new_tokens = static_cast<int32_t>(max_tokens);
  params.end_of_generation_ids = tokenizer().end_of_generation_ids();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Continuation> results;
  for (const BeamHypothesis& h : run_beam_search(*loaded_.model, prompt, params, config_.n_threads)) {
    Continuation c;
    c.score = h.score;
    for (int32_t token : h.tokens)
      if (!tokenizer().is_end_of_generation(token)) c.tokens.push_back(token);
    c.text = tokenizer().decode(c.tokens);
    results.push_back(std::move(c));
  }
  return results;
}

GenerationTrace Explainer::trace(const std::string& context, SamplingParams params, int64_t max_tokens) {
  const std::vector<int32_t> prompt = encode(context, max_tokens);
  if (!params.seed) params.seed = random_seed();
  std::lock_guard<std::mutex> lock(mutex_);
  SamplerChain chain(params);
  return trace_generation(*loaded_.model, prompt, max_tokens, chain, tokenizer(), config_.n_threads);
}

MachinePeak Explainer::machine_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!peak_) peak_ = measure_machine_peak(config_.n_threads);
  return *peak_;
}

SpeculativeTrace Explainer::speculate(const std::string& context, SpeculativeOptions options) {
  const std::vector<int32_t> prompt = encode(context, options.max_tokens + options.gamma);
  if (!options.sampling.seed) options.sampling.seed = random_seed();
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<Proposer> proposer;
  switch (options.proposer) {
    case ProposerKind::ngram:
      proposer = std::make_unique<NgramProposer>(1, 3);
      break;
    case ProposerKind::self: {
      const int64_t layers = options.self_layers > 0 ? options.self_layers : std::max<int64_t>(1, hparams().n_layer - 1);
      proposer = make_self_speculation_proposer(*loaded_.model, layers, options.sampling, config_.n_threads);
      break;
    }
    case ProposerKind::draft:
      if (!has_draft_model()) throw Error("the server has no draft model (start it with --draft MODEL)");
      proposer = std::make_unique<DraftModelProposer>(*draft_, options.sampling, config_.n_threads,
                                                      "draft:" + config_.draft_path);
      break;
  }
  return trace_speculative(*loaded_.model, *proposer, tokenizer(), prompt, options.sampling, options.gamma, options.max_tokens,
                           config_.n_threads);
}

}  // namespace nucleus::explain
