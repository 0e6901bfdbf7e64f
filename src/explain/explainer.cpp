#include "explain/explainer.h"

#include <algorithm>

#include "core/error.h"
#include "engine/beam_search_runner.h"
#include "io/ggml_type.h"
#include "model/sequence_runner.h"
#include "speculative/draft_model_proposer.h"
#include "speculative/ngram_proposer.h"
#include "speculative/self_speculation.h"

namespace nucleus::explain {

namespace {

// The context's tokens (with BOS), checked to fit `hparams`' context with extra_positions more.
std::vector<int32_t> encode_context(const Tokenizer& tokenizer, const HParams& hparams, const std::string& context,
                                    int64_t extra_positions) {
  std::vector<int32_t> tokens = tokenizer.encode(context, /*add_special=*/true, /*parse_special=*/false);
  if (tokens.empty()) {
    if (tokenizer.bos_id() < 0) throw Error("the context is empty and the model has no BOS token to start from");
    tokens.push_back(tokenizer.bos_id());
  }
  const int64_t n_ctx = hparams.n_ctx_train;
  if (static_cast<int64_t>(tokens.size()) + extra_positions > n_ctx)
    throw Error("the context has " + std::to_string(tokens.size()) + " tokens; with " + std::to_string(extra_positions) +
                " more it exceeds the model's context length of " + std::to_string(n_ctx));
  return tokens;
}

SpeedModelInfo describe_speed_model(const Model& model, const std::string& path, bool same_as_served) {
  SpeedModelInfo info;
  const HParams& hp = model.hparams();
  info.path = path;
  info.same_as_served = same_as_served;
  info.random_weights = model.file().get_string("general.name", "").rfind("synthetic-", 0) == 0;
  info.n_embd = hp.n_embd;
  info.n_layer = hp.n_layer;
  info.n_ff = hp.n_ff;
  info.n_head = hp.n_head;
  info.n_head_kv = hp.n_head_kv;
  info.n_vocab = hp.n_vocab;
  info.n_ctx = hp.n_ctx_train;
  const TensorInfo* ffn = model.file().find_tensor("blk.0.ffn_up.weight");
  if (!ffn) ffn = model.file().find_tensor("blk.0.ffn_down.weight");
  info.weight_type = ffn ? ggml_type_name(ffn->type) : "";
  info.weight_bytes = static_cast<double>(model.weight_bytes());
  return info;
}

}  // namespace

Explainer::Explainer(ExplainerConfig config) : config_(std::move(config)) {
  config_.n_threads = std::max(1, config_.n_threads);
  if (config_.weights_from) {
    loaded_.model = config_.weights_from->share_weights();
    loaded_.tokenizer = Tokenizer::from_gguf(loaded_.model->file(), config_.source.tokenizer_options);
  } else {
    loaded_ = load_model(config_.source);
  }
  const bool same = config_.speed_model_path.empty() || config_.speed_model_path == config_.source.model_path;
  if (same) {
    speed_.model = loaded_.model->share_weights();
    speed_.tokenizer = Tokenizer::from_gguf(speed_.model->file(), config_.source.tokenizer_options);
  } else {
    ModelSource speed_source;
    speed_source.model_path = config_.speed_model_path;
    speed_ = load_model(speed_source);
  }
  speed_info_ = describe_speed_model(*speed_.model, same ? config_.source.model_path : config_.speed_model_path, same);
  if (config_.draft_weights_from) {
    draft_ = config_.draft_weights_from->share_weights();
  } else if (!config_.draft_path.empty()) {
    ModelSource draft_source;
    draft_source.model_path = config_.draft_path;
    draft_ = std::move(load_model(draft_source).model);
  }
  // The draft proposes for the speed model (panel 3): usable only with its vocabulary.
  if (draft_) {
    try {
      check_same_vocabulary(speed_.model->file(), draft_->file(), config_.draft_path);
    } catch (const Error&) {
      draft_.reset();
    }
  }
  batching_ = std::make_unique<BatchingCurve>(*speed_.model, config_.n_threads, speed_slot_);
}

Explainer::~Explainer() { batching_.reset(); }  // stops a running curve before the models go

std::string Explainer::default_context() const {
  std::string path = config_.source.model_path;
  std::transform(path.begin(), path.end(), path.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return path.find("stories") != std::string::npos ? "Once upon a time" : "The";
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
  const std::vector<int32_t> tokens = encode_context(tokenizer(), hparams(), context, 0);
  std::lock_guard<std::mutex> lock(mutex_);
  return next_token_distribution(logits_for(tokens).data(), hparams().n_vocab, params, tokens, tokenizer(), top_n);
}

SampledToken Explainer::sample(const std::string& context, SamplingParams params) {
  std::vector<int32_t> tokens = encode_context(tokenizer(), hparams(), context, 1);
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
  std::vector<int32_t> prompt = encode_context(tokenizer(), hparams(), context, max_tokens);
  if (!params.seed) params.seed = random_seed();
  std::lock_guard<std::mutex> lock(mutex_);
  return generate_continuation(*loaded_.model, tokenizer(), std::move(prompt), params, max_tokens, /*stop_at_sentence_end=*/true,
                               config_.n_threads);
}

Continuation Explainer::greedy(const std::string& context, int64_t max_tokens) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.seed = 0;
  return resample(context, params, max_tokens);
}

std::vector<Continuation> Explainer::beams(const std::string& context, int32_t num_beams, int64_t max_tokens) {
  const std::vector<int32_t> prompt = encode_context(tokenizer(), hparams(), context, max_tokens);
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

std::vector<DecodedOutput> Explainer::degeneration(const std::string& context, SamplingParams sampling, int32_t num_beams,
                                                   int64_t max_tokens) {
  const std::vector<int32_t> prompt = encode_context(tokenizer(), hparams(), context, max_tokens);
  if (!sampling.seed) sampling.seed = random_seed();
  std::lock_guard<std::mutex> lock(mutex_);
  return compare_decoders(*loaded_.model, tokenizer(), prompt, sampling, num_beams, max_tokens, config_.n_threads);
}

GenerationTrace Explainer::trace(const std::string& context, SamplingParams params, int64_t max_tokens) {
  const std::vector<int32_t> prompt = encode_context(*speed_.tokenizer, speed_hparams(), context, max_tokens);
  if (!params.seed) params.seed = random_seed();
  const MeasurementSlot::Hold hold = speed_slot_.acquire();
  SamplerChain chain(params);
  return trace_generation(*speed_.model, prompt, max_tokens, chain, *speed_.tokenizer, config_.n_threads);
}

MachinePeak Explainer::machine_peak() {
  std::lock_guard<std::mutex> lock(peak_mutex_);
  if (!peak_) {
    const MeasurementSlot::Hold hold = speed_slot_.acquire();  // measured alone, like every timing here
    peak_ = measure_machine_peak(config_.n_threads);
  }
  return *peak_;
}

SpeculativeTrace Explainer::speculate(const std::string& context, SpeculativeOptions options) {
  const std::vector<int32_t> prompt = encode_context(*speed_.tokenizer, speed_hparams(), context, options.max_tokens + options.gamma);
  if (!options.sampling.seed) options.sampling.seed = random_seed();
  const MeasurementSlot::Hold hold = speed_slot_.acquire();
  std::unique_ptr<Proposer> proposer;
  switch (options.proposer) {
    case ProposerKind::ngram:
      proposer = std::make_unique<NgramProposer>(1, 3);
      break;
    case ProposerKind::self: {
      const int64_t layers = options.self_layers > 0 ? options.self_layers : std::max<int64_t>(1, speed_hparams().n_layer - 1);
      proposer = make_self_speculation_proposer(*speed_.model, layers, options.sampling, config_.n_threads);
      break;
    }
    case ProposerKind::draft:
      if (!has_draft_model()) throw Error("the server has no draft model for the speed model (start it with --draft MODEL)");
      proposer = std::make_unique<DraftModelProposer>(*draft_, options.sampling, config_.n_threads, "draft:" + config_.draft_path);
      break;
  }
  return trace_speculative(*speed_.model, *proposer, *speed_.tokenizer, prompt, options.sampling, options.gamma, options.max_tokens,
                           config_.n_threads);
}

BatchingSchedules Explainer::schedules(const ScheduleWorkload& workload) {
  const MeasurementSlot::Hold hold = speed_slot_.acquire();
  BatchingSchedules result;
  // Continuous first: whatever a first run warms up helps the static one, so the comparison can
  // only understate continuous batching's lead.
  result.continuous = run_schedule(*speed_.model, workload, /*continuous=*/true, config_.n_threads);
  result.static_batching = run_schedule(*speed_.model, workload, /*continuous=*/false, config_.n_threads);
  return result;
}

}  // namespace nucleus::explain
