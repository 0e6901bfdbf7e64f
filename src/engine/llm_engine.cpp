#include "engine/llm_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "core/error.h"
#include "core/weight_memory.h"

namespace nucleus {

int64_t kv_blocks_for_bytes(const HParams& hp, int64_t block_size, int64_t bytes, KvType type) {
  int64_t kv_layers = 0;  // recurrent layers (Qwen3.5's delta-net) keep no K/V rows
  for (const LayerSpec& l : hp.layers) kv_layers += l.delta_net ? 0 : 1;
  const int64_t per_block = 2 * std::max<int64_t>(1, kv_layers) * block_size * hp.kv_dim() * kv_type_bytes(type);
  return std::max<int64_t>(1, bytes / per_block);
}

namespace {

KvCacheShape sized_kv_shape(const HParams& hp, const EngineConfig& config) {
  if (config.block_size <= 0) throw Error("--block-size must be positive");
  KvCacheShape shape{hp.n_layer, 0, config.block_size, hp.kv_dim(), config.kv_type};
  // Recurrent layers (Qwen3.5): one state slot per request that can run at once (ModelRunner).
  shape.recurrent = recurrent_state_shape(hp, std::max<int64_t>(1, config.max_num_seqs));
  int64_t state_bytes = 0;  // allocated up front for every slot, out of the same budget
  for (bool recurrent : shape.recurrent.layers)
    if (recurrent) state_bytes += shape.recurrent.num_slots * (shape.recurrent.conv_floats + shape.recurrent.ssm_floats) * 4;
  int64_t window = 0, n_window_layers = 0;
  for (const LayerSpec& l : hp.layers)
    if (l.sliding_window > 0) {
      window = std::max(window, l.sliding_window);
      ++n_window_layers;
    }
  if (!config.window_kv_pool || n_window_layers == 0) {
    shape.num_blocks = config.num_blocks > 0 ? config.num_blocks
                                             : kv_blocks_for_bytes(hp, config.block_size, std::max<int64_t>(0, config.kv_cache_bytes - state_bytes), config.kv_type);
    return shape;
  }
  for (const LayerSpec& l : hp.layers) shape.window_layers.push_back(l.sliding_window > 0);
  const int64_t bs = config.block_size;
  const int64_t row_bytes = 2 * bs * hp.kv_dim() * kv_type_bytes(config.kv_type);  // one layer's K and V of a block
  const int64_t per_main = (hp.n_layer - n_window_layers) * row_bytes, per_window = n_window_layers * row_bytes;
  // A decoding request holds the blocks of its window plus a block of new tokens (drafts included);
  // the step's prefill chunks need up to max_num_batched_tokens more positions on top. More than
  // that only makes the scheduler preempt, which stays correct.
  const int64_t per_request = (window + bs + bs - 1) / bs + 1;
  const int64_t window_needed = config.max_num_seqs * per_request + (config.max_num_batched_tokens + bs - 1) / bs;
  if (config.num_blocks > 0) {
    shape.num_blocks = config.num_blocks;
    shape.num_window_blocks = config.num_window_blocks > 0 ? config.num_window_blocks : std::min(config.num_blocks, window_needed);
    return shape;
  }
  const int64_t unified = std::max<int64_t>(1, config.kv_cache_bytes / (per_main + per_window));
  shape.num_window_blocks = config.num_window_blocks > 0 ? config.num_window_blocks : std::min(unified, window_needed);
  const int64_t left = config.kv_cache_bytes - shape.num_window_blocks * per_window;
  // Every layer slides: the main pool stores nothing and only counts positions.
  shape.num_blocks = per_main > 0 ? std::max<int64_t>(1, left / per_main) : std::max<int64_t>(1, config.kv_cache_bytes / row_bytes);
  return shape;
}

}  // namespace

KvCacheShape engine_kv_shape(const HParams& hp, const EngineConfig& config) {
  KvCacheShape shape = sized_kv_shape(hp, config);
  constexpr int64_t kMaxBlocks = std::numeric_limits<int32_t>::max();  // block ids are int32
  if (shape.num_blocks > kMaxBlocks || shape.num_window_blocks > kMaxBlocks)
    throw Error("the KV cache would have " + std::to_string(std::max(shape.num_blocks, shape.num_window_blocks)) +
                " blocks, more than the " + std::to_string(kMaxBlocks) + " block ids there are (lower --kv-cache-mem or --num-blocks, or raise --block-size)");
  return shape;
}

namespace {

// What the KV pool may take: the memory available less the mapped weights, which the forward pass
// keeps reading and which MemAvailable counts as reclaimable page cache. 0: no check.
size_t kv_memory_budget(const Model& model, const EngineConfig& config) {
  if (!config.check_memory) return 0;
  const size_t available = config.available_memory > 0 ? config.available_memory : available_memory_bytes();
  if (available == 0) return 0;  // unknown
  return std::max<size_t>(1, available - std::min(available, model.mapped_weight_bytes()));
}

}  // namespace

LLMEngine::LLMEngine(Model& model, const Tokenizer* tokenizer, const EngineConfig& config)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      max_model_len_(config.max_model_len > 0 ? std::min(config.max_model_len, model.hparams().n_ctx)
                                              : model.hparams().n_ctx),
      kv_(engine_kv_shape(model.hparams(), config), kv_memory_budget(model, config)),
      pool_(static_cast<int32_t>(kv_.shape().num_blocks), static_cast<int32_t>(config.block_size)),
      window_pool_(static_cast<int32_t>(std::max<int64_t>(1, kv_.shape().num_window_blocks)), static_cast<int32_t>(config.block_size)),
      // A prefix-cache hit would skip the tokens a recurrent state must absorb: off for hybrid models.
      kv_manager_(pool_, config.enable_prefix_caching && !model.hparams().has_recurrent_layers(), kv_.has_window_pool() ? &window_pool_ : nullptr,
                  [&] {
                    int64_t w = 0;
                    for (const LayerSpec& l : model.hparams().layers) w = std::max(w, l.sliding_window);
                    return w;
                  }()),
      scheduler_(SchedulerConfig{config.max_num_batched_tokens, config.max_num_seqs}, kv_manager_),
      runner_(model, kv_, std::max(1, config.n_threads)) {
  config_.num_blocks = kv_.shape().num_blocks;
  if (model.hparams().has_recurrent_layers() && config_.enable_prefix_caching) {  // see kv_manager_ above
    config_.enable_prefix_caching = false;
    const RecurrentStateShape& r = kv_.shape().recurrent;
    int64_t recurrent_layers = 0, kv_layers = 0;
    for (bool recurrent : r.layers) (recurrent ? recurrent_layers : kv_layers) += 1;
    const double snapshot = static_cast<double>(recurrent_layers * (r.conv_floats + r.ssm_floats) * 4);
    const double block = static_cast<double>(2 * kv_layers * config_.block_size * model.hparams().kv_dim() * kv_type_bytes(config_.kv_type));
    char reason[256];
    std::snprintf(reason, sizeof reason,
                  "the model has recurrent (gated delta-net) layers, whose state would have to be saved at every "
                  "%lld-token block boundary: %.2f MiB per snapshot against %.2f MiB of K/V per block",
                  static_cast<long long>(config_.block_size), snapshot / (1 << 20), block / (1 << 20));
    prefix_caching_off_reason_ = reason;
  }
  if (config.max_num_batched_tokens <= 0 || config.max_num_seqs <= 0)
    throw Error("--max-num-batched-tokens and --max-num-seqs must be positive");
}

void LLMEngine::validate_request(const std::vector<int32_t>& prompt, const RequestOptions& options) const {
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt == 0) throw Error("the prompt is empty (no tokens)");
  const int64_t n_vocab = model_.hparams().n_vocab;
  for (int32_t t : prompt)
    if (t < 0 || t >= n_vocab)
      throw Error("token id " + std::to_string(t) + " is out of range (vocabulary size " + std::to_string(n_vocab) + ")");
  if (n_prompt >= max_model_len_)
    throw Error("the prompt has " + std::to_string(n_prompt) + " tokens but the context length is " +
                std::to_string(max_model_len_) + " (at least one position must remain for the output)");
  const int64_t capacity = kv_.capacity_tokens();
  if (n_prompt >= capacity)
    throw Error("the prompt has " + std::to_string(n_prompt) + " tokens but the KV cache holds only " +
                std::to_string(capacity) + " (raise --kv-cache-mem or --num-blocks)");
  validate_sampling_params(options.sampling);
  if (options.num_speculative_tokens < 0 || options.num_speculative_tokens > kMaxSpeculativeTokens)
    throw Error("num_speculative_tokens must be in [0, " + std::to_string(kMaxSpeculativeTokens) + "], got " +
                std::to_string(options.num_speculative_tokens));
  if (options.stop.max_tokens < 0) throw Error("max_tokens must not be negative");
  if (options.grammar && !tokenizer_) throw Error("structured output needs the model's tokenizer");
  if (options.stop.min_tokens < 0) throw Error("min_tokens must not be negative");
}

int64_t LLMEngine::add_request(std::vector<int32_t> prompt, RequestOptions options, int64_t id) {
  validate_request(prompt, options);
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  const int64_t capacity = kv_.capacity_tokens();
  // A request alone must always fit, so preemption can never livelock.
  options.stop.max_tokens = static_cast<int32_t>(
      std::min<int64_t>(options.stop.max_tokens, std::min(max_model_len_, capacity) - n_prompt));

  auto request = std::make_unique<Request>();
  if (id < 0) id = next_id_++;
  if (requests_.count(id)) throw Error("internal: duplicate request id " + std::to_string(id));
  request->id = id;
  request->arrival = next_arrival_++;
  request->tokens = std::move(prompt);
  request->num_prompt_tokens = n_prompt;
  if (tokenizer_) {
    options.sampling.end_of_generation_ids = options.stop.ignore_eos ? std::vector<int32_t>{} : tokenizer_->end_of_generation_ids();
    request->detokenizer = std::make_unique<IncrementalDetokenizer>(*tokenizer_);
  }
  options.sampling.min_tokens = std::max(options.sampling.min_tokens, options.stop.min_tokens);
  if (options.grammar) {
    if (!vocabulary_trie_) vocabulary_trie_ = std::make_shared<const VocabularyTrie>(*tokenizer_);
    if (constraint_tables_.size() >= 32)
      std::erase_if(constraint_tables_, [](const auto& entry) { return entry.second.use_count() == 1; });
    std::shared_ptr<ConstraintTables>& tables = constraint_tables_[options.grammar.get()];
    if (!tables) tables = std::make_shared<ConstraintTables>(options.grammar, vocabulary_trie_);
    request->constraint = std::make_unique<TokenConstraint>(tables, options.grammar_trigger);
  }
  request->sampler = std::make_unique<SamplerChain>(options.sampling);
  request->stop = std::make_unique<StopChecker>(options.stop);
  request->options = std::move(options);
  stats_.prompt_tokens += n_prompt;
  Request* raw = request.get();
  requests_.emplace(id, std::move(request));
  if (raw->options.stop.max_tokens == 0) {  // nothing to generate: answer at once
    RequestOutput out;
    finish(*raw, FinishReason::length, out);
    aborted_outputs_.push_back(out);
    requests_.erase(id);
    return id;
  }
  scheduler_.add(raw);
  return id;
}

void LLMEngine::finish(Request& request, FinishReason reason, RequestOutput& output) {
  scheduler_.remove(&request);
  runner_.release_state(request);
  output.request_id = request.id;
  output.finished = true;
  output.finish_reason = reason;
  output.num_prompt_tokens = request.num_prompt_tokens;
  output.num_output_tokens = request.num_output_tokens();
  output.seed = request.sampler->seed();
}

void LLMEngine::abort(int64_t request_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  RequestOutput out;
  finish(*it->second, FinishReason::none, out);
  out.aborted = true;
  aborted_outputs_.push_back(out);
  requests_.erase(it);
}

void LLMEngine::propose_drafts(std::vector<RequestOutput>& outputs) {
  // Requests due a draft, grouped by their proposers' batch group: a group drafts in one
  // propose_batch call (a shared draft model: one pass per draft position for all of them).
  std::vector<std::vector<DueDraft>> groups;
  std::map<const void*, size_t> group_of;
  for (auto& [id, owned] : requests_) {
    Request& request = *owned;
    request.draft.clear();
    if (!request.speculative() || request.status != RequestStatus::running ||
        request.num_computed_tokens != request.num_tokens() - 1)
      continue;
    // Drafts past the token budget could never be kept: the pass's own token is the last one.
    const int64_t room = request.options.stop.max_tokens - request.num_output_tokens() - 1;
    const auto num_draft = static_cast<int32_t>(std::min<int64_t>(request.options.num_speculative_tokens, room));
    if (num_draft <= 0) continue;
    DueDraft due{&request, DraftRequest{request.tokens, request.num_prompt_tokens, num_draft, request.sampler->seed(),
                                   static_cast<uint64_t>(request.num_output_tokens())}};
    const void* key = request.options.proposer->batch_group();
    if (key == nullptr) {
      groups.push_back({due});
      continue;
    }
    const auto [it, added] = group_of.try_emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(due);
  }
  for (const std::vector<DueDraft>& group : groups) propose_group(group, outputs);
}

void LLMEngine::propose_group(std::span<const DueDraft> group, std::vector<RequestOutput>& outputs) {
  const int64_t n_vocab = model_.hparams().n_vocab;
  std::vector<Proposer*> members;
  std::vector<DraftRequest> drafts;
  std::vector<DraftProposal*> proposals;
  for (const DueDraft& due : group) {
    members.push_back(due.request->options.proposer.get());
    drafts.push_back(due.draft);
    proposals.push_back(&due.request->draft);
  }
  // A request ends with the reason its drafts failed; the others go on.
  auto fail = [&](Request& request, const std::string& why) {
    request.draft.clear();
    RequestOutput out;
    finish(request, FinishReason::none, out);
    out.error = "speculative decoding: proposer " + request.options.proposer->name() + " failed: " + why;
    outputs.push_back(std::move(out));
    requests_.erase(request.id);
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    members.front()->propose_batch(members, drafts, proposals);
  } catch (const std::exception& e) {
    for (const DueDraft& due : group) fail(*due.request, e.what());
    return;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.spec.draft_seconds += seconds;
  for (const DueDraft& due : group) {
    Request& request = *due.request;
    request.spec.draft_seconds += seconds / static_cast<double>(group.size());  // the group's time, shared
    const auto n_draft = static_cast<int64_t>(request.draft.tokens.size());
    std::string malformed;
    if (n_draft > due.draft.num_draft_tokens ||
        (!request.draft.probs.empty() && static_cast<int64_t>(request.draft.probs.size()) != n_draft * n_vocab))
      malformed = "it returned a malformed proposal";
    for (int32_t t : request.draft.tokens)
      if (malformed.empty() && (t < 0 || t >= n_vocab)) malformed = "it proposed token id " + std::to_string(t) + ", out of range";
    if (!malformed.empty()) fail(request, malformed);
  }
}

bool LLMEngine::emit(Request& request, int32_t token, const float* logits_row, RequestOutput& out) {
  const int64_t n_vocab = model_.hparams().n_vocab;
  request.tokens.push_back(token);
  ++stats_.generated_tokens;
  out.new_tokens.push_back(token);
  out.num_output_tokens = request.num_output_tokens();
  if (request.options.return_logits) out.logits.emplace_back(logits_row, logits_row + n_vocab);
  const bool end_of_generation = tokenizer_ && tokenizer_->is_end_of_generation(token);
  const std::string text = request.detokenizer ? request.detokenizer->push(token) : std::string();
  out.text += request.stop->on_token(end_of_generation, text);
  FinishReason reason = request.stop->finish_reason();
  if (reason == FinishReason::none && request.num_tokens() >= max_model_len_) {
    out.text += request.stop->finish(FinishReason::length);
    reason = FinishReason::length;
  }
  if (reason == FinishReason::none) return false;
  if (reason == FinishReason::length && request.detokenizer) out.text += request.detokenizer->flush();
  finish(request, reason, out);
  return true;
}

std::vector<RequestOutput> LLMEngine::step() {
  std::vector<RequestOutput> outputs = std::move(aborted_outputs_);
  aborted_outputs_.clear();
  propose_drafts(outputs);
  const SchedulerOutput plan = scheduler_.schedule();
  stats_.preemptions += plan.num_preempted;
  stats_.prefix_cached_tokens += plan.num_prefix_cached_tokens;
  stats_.prefix_query_tokens += plan.num_prefix_query_tokens;
  stats_.last_step_requests = static_cast<int64_t>(plan.scheduled.size());
  stats_.last_step_tokens = plan.num_batched_tokens;
  if (plan.scheduled.empty()) return outputs;
  ++stats_.steps;
  stats_.computed_tokens += plan.num_batched_tokens;

  runner_.run(plan, step_result_);
  scheduler_.update_after_step(plan);

  const int64_t n_vocab = model_.hparams().n_vocab;
  std::vector<int64_t> finished_ids;
  for (const ModelRunner::SampledRows& rows : step_result_.sampling) {
    Request& request = *rows.request;
    const float* logits = step_result_.logits.data() + rows.first_row * n_vocab;
    const auto first_position = static_cast<uint64_t>(request.num_output_tokens());
    // The pass's tokens: a plain sample, or the accepted drafts and one more.
    std::vector<int32_t>& emitted = emitted_;
    emitted.clear();
    RequestOutput out;
    if (request.constraint) {
      // The token budget may have cut the drafts short: only the computed ones are checked.
      if (request.speculative()) request.draft.tokens.resize(static_cast<size_t>(rows.n_rows - 1));
      bool dead = false;
      const auto start = std::chrono::steady_clock::now();
      try {
        logits = mask_constrained_rows(request, logits, rows.n_rows, dead);
      } catch (const Error& e) {  // e.g. a grammar too ambiguous to mask: this request ends, the others go on
        fail_request(request, std::string("structured output: ") + e.what(), out, outputs, finished_ids);
        continue;
      }
      out.mask_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (dead) {
        // Nothing can follow: a complete output ends here; an incomplete one cannot be finished
        // with this vocabulary (the request is told so, never answered with broken output).
        const bool complete = request.constraint->complete();
        if (complete && request.detokenizer) out.text += request.detokenizer->flush();
        finish(request, complete ? FinishReason::stop : FinishReason::none, out);
        if (!complete) out.error = "structured output: no token of the vocabulary can continue the output";
        outputs.push_back(std::move(out));
        finished_ids.push_back(request.id);
        continue;
      }
    }
    const int64_t n_verify = request.speculative() ? static_cast<int64_t>(request.draft.tokens.size()) : 0;
    bool draft_rejected = false;
    if (request.speculative()) {
      // The token budget may have cut the drafts short: only the computed ones are verified
      // (and a constraint may have dropped those after the first it refuses).
      const int64_t n_draft = rows.n_rows - 1;
      request.draft.tokens.resize(static_cast<size_t>(std::min(n_draft, n_verify)));
      if (!request.draft.probs.empty()) request.draft.probs.resize(request.draft.tokens.size() * static_cast<size_t>(n_vocab));
      const VerificationResult result = verifier_.verify(*request.sampler, request.tokens, request.draft, logits, n_vocab,
                                                         request.sampler->seed(), first_position);
      emitted.assign(request.draft.tokens.begin(), request.draft.tokens.begin() + result.num_accepted);
      emitted.push_back(result.token);
      SpeculativeStats pass;
      pass.num_passes = 1;
      pass.num_proposed = n_draft;
      pass.num_accepted = result.num_accepted;
      pass.num_emitted = result.num_accepted + 1;
      pass.num_rejected = result.num_accepted < n_draft ? 1 : 0;
      draft_rejected = result.num_accepted < n_draft;
      request.spec.add(pass);
      stats_.spec.add(pass);
    } else {
      const SamplingContext context{std::span<const int32_t>(request.tokens), first_position};
      emitted.push_back(request.sampler->sample(logits, n_vocab, context));
    }
    request.draft.clear();
    if (request.constraint) {
      try {
        for (int32_t token : emitted)
          if (!request.constraint->accept_token(token)) throw Error("internal: a masked sample broke its grammar");
      } catch (const Error& e) {
        fail_request(request, std::string("structured output: ") + e.what(), out, outputs, finished_ids);
        continue;
      }
    }

    out.request_id = request.id;
    out.num_prompt_tokens = request.num_prompt_tokens;
    out.seed = request.sampler->seed();
    bool finished = false;
    for (size_t k = 0; k < emitted.size() && !finished; ++k)
      finished = emit(request, emitted[k], logits + static_cast<int64_t>(k) * n_vocab, out);
    out.spec = request.spec;
    if (finished) {
      finished_ids.push_back(request.id);
    } else if (request.speculative()) {
      // The cache keeps the last token and the accepted drafts; rejected drafts' blocks go back.
      request.num_computed_tokens = request.num_tokens() - 1;
      if (draft_rejected && kv_.has_recurrent_state()) {
        // The recurrent state took every draft and cannot drop the rejected ones: it goes back to
        // before the pass, and the accepted tokens are computed again (next step, like the end of
        // a prefill: up to the last token, which enters the next verification pass).
        runner_.restore_state(request);
        request.num_computed_tokens = request.state_before_pass.tokens;
      }
      kv_manager_.release_unused_blocks(request);
      kv_manager_.cache_full_blocks(request);
    }
    outputs.push_back(std::move(out));
  }
  for (int64_t id : finished_ids) requests_.erase(id);
  const auto now = std::chrono::steady_clock::now();
  for (RequestOutput& out : outputs) out.produced_at = now;
  return outputs;
}

void LLMEngine::fail_request(Request& request, std::string message, RequestOutput& out, std::vector<RequestOutput>& outputs,
                             std::vector<int64_t>& finished_ids) {
  finish(request, FinishReason::none, out);
  out.error = std::move(message);
  outputs.push_back(std::move(out));
  finished_ids.push_back(request.id);
}

const float* LLMEngine::mask_constrained_rows(Request& request, const float* logits, int64_t n_rows, bool& dead) {
  const int64_t n_vocab = model_.hparams().n_vocab;
  TokenConstraint& constraint = *request.constraint;
  std::vector<int32_t>& drafts = request.draft.tokens;
  masked_rows_.resize(static_cast<size_t>(n_rows * n_vocab));
  size_t taken = 0;  // drafts accepted by the grammar so far (undone below)
  int64_t row = 0;
  for (; row < n_rows; ++row) {
    float* masked = masked_rows_.data() + row * n_vocab;
    std::copy_n(logits + row * n_vocab, n_vocab, masked);
    constraint.mask_logits(masked, n_vocab);
    if (row == 0) dead = constraint.allowed_tokens().count() == 0;
    if (row >= static_cast<int64_t>(drafts.size())) break;
    if (!constraint.accept_token(drafts[static_cast<size_t>(row)])) {
      drafts.resize(static_cast<size_t>(row) + 1);  // keep the refused draft: verification rejects it
      break;
    }
    ++taken;
  }
  // Every draft accepted: the loop also masked the bonus row. A refused draft ends the list, and
  // the row after it is never read (verification stops at the refusal).
  constraint.rollback(taken);
  return masked_rows_.data();
}

EngineStats LLMEngine::stats() const {
  EngineStats s = stats_;
  s.num_running = static_cast<int64_t>(scheduler_.num_running());
  s.num_waiting = static_cast<int64_t>(scheduler_.num_waiting());
  s.kv_blocks_total = pool_.num_blocks();
  s.kv_blocks_used = pool_.num_used_blocks();
  s.kv_block_size = config_.block_size;
  s.prefix_caching = config_.enable_prefix_caching;
  s.block_pool = pool_.counters();
  if (kv_.has_window_pool()) {
    s.kv_window_blocks_total = window_pool_.num_blocks();
    s.kv_window_blocks_used = window_pool_.num_used_blocks();
  }
  s.state_slots_total = kv_.shape().recurrent.num_slots;
  s.state_slots_used = runner_.num_state_slots_used();
  for (const auto& [id, request] : requests_)
    if (!request->block_table.empty()) s.kv_tokens_stored += request->num_computed_tokens;
  return s;
}

}  // namespace nucleus
