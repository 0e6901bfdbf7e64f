#include "server/generation.h"

#include "core/error.h"
#include "sampling/sampler.h"
#include "server/api_error.h"

namespace nucleus::server {

namespace {
double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

Generation::Generation(AsyncEngine& engine, const GenerationRequest& request, ServerMetrics& metrics,
                       std::atomic<int64_t>& in_flight, const Speculation& speculation)
    : engine_(engine), metrics_(metrics), in_flight_(in_flight), top_logprobs_(request.top_logprobs), n_(request.n),
      start_(std::chrono::steady_clock::now()) {
  const uint64_t seed = request.options.sampling.seed.value_or(0);
  sequences_.resize(static_cast<size_t>(request.num_sequences()));
  for (size_t p = 0; p < request.prompts.size(); ++p) {
    for (int j = 0; j < request.n; ++j) {
      SequenceState& sequence = sequences_[p * static_cast<size_t>(request.n) + static_cast<size_t>(j)];
      sequence.index = static_cast<int>(p) * request.n + j;
      sequence.num_prompt_tokens = static_cast<int64_t>(request.prompts[p].size());
      RequestOptions options = request.options;
      options.sampling.seed = sample_seed(seed, static_cast<uint64_t>(j));
      options.return_logits = request.top_logprobs >= 0;
      if (speculation.make_proposer && speculation.gamma > 0) {
        options.proposer = speculation.make_proposer(options.sampling);
        options.num_speculative_tokens = speculation.gamma;
      }
      try {
        sequence.stream = engine.submit(request.prompts[p], std::move(options));
      } catch (const Error& e) {
        abort_all();
        throw ApiError(400, e.what(), "invalid_request_error", "prompt");
      }
      ++num_unfinished_;
      ++in_flight_;
    }
  }
}

Generation::~Generation() { abort_all(); }

void Generation::abort_all() {
  for (SequenceState& sequence : sequences_) {
    if (!sequence.stream || sequence.finished) continue;
    engine_.abort(sequence.stream->id());
    sequence.aborted = true;
    finish(sequence, "abort");
  }
}

void Generation::finish(SequenceState& sequence, const char* reason) {
  sequence.finished = true;
  --num_unfinished_;
  --in_flight_;
  metrics_.observe_sequence_finished(seconds_between(start_, std::chrono::steady_clock::now()), reason);
}

bool Generation::take(SequenceState& sequence, RequestOutput& out, std::vector<SequenceDelta>& deltas) {
  const auto now = std::chrono::steady_clock::now();
  metrics_.observe_structured_mask(out.mask_seconds);
  if (!out.new_tokens.empty()) {
    if (!sequence.has_output) {
      metrics_.observe_time_to_first_token(seconds_between(start_, now));
    } else {
      metrics_.observe_inter_token_latency(seconds_between(sequence.last_output, now));
    }
    sequence.has_output = true;
    sequence.last_output = now;
  }
  SequenceDelta delta;
  delta.index = sequence.index;
  delta.text = out.text;
  delta.tokens = out.new_tokens;
  if (top_logprobs_ >= 0) {
    for (size_t i = 0; i < out.new_tokens.size() && i < out.logits.size(); ++i)
      delta.logprobs.push_back(logprobs_from_logits(out.logits[i].data(), static_cast<int64_t>(out.logits[i].size()),
                                                    out.new_tokens[i], top_logprobs_));
  }
  sequence.text += delta.text;
  sequence.tokens.insert(sequence.tokens.end(), delta.tokens.begin(), delta.tokens.end());
  sequence.logprobs.insert(sequence.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
  if (out.num_prompt_tokens) sequence.num_prompt_tokens = out.num_prompt_tokens;
  if (out.num_output_tokens) sequence.num_output_tokens = out.num_output_tokens;
  if (out.finished && !sequence.finished) {
    sequence.finish_reason = out.finish_reason;
    sequence.aborted = out.aborted;
    sequence.error = out.error;
    delta.finished = true;
    delta.finish_reason = out.finish_reason;
    finish(sequence, !out.error.empty() ? "error" : out.aborted ? "abort" : finish_reason_name(out.finish_reason));
  }
  if (!delta.text.empty() || !delta.tokens.empty() || delta.finished) deltas.push_back(std::move(delta));
  return out.finished;
}

std::vector<SequenceDelta> Generation::poll(int64_t timeout_ms) {
  std::vector<SequenceDelta> deltas;
  bool waited = false;
  for (SequenceState& sequence : sequences_) {
    while (!sequence.finished) {
      RequestOutput out;
      bool timed_out = false;
      // Block only on the first unfinished sequence; take the others' outputs without waiting.
      const int64_t wait = waited ? 0 : timeout_ms;
      waited = true;
      if (!sequence.stream->next_for(out, wait, &timed_out)) {  // ended without a final output
        sequence.aborted = true;
        finish(sequence, "abort");
        break;
      }
      if (timed_out) break;
      if (take(sequence, out, deltas)) break;
    }
  }
  return deltas;
}

int64_t Generation::prompt_tokens() const {
  int64_t total = 0;
  for (size_t i = 0; i < sequences_.size(); i += static_cast<size_t>(n_)) total += sequences_[i].num_prompt_tokens;
  return total;
}

int64_t Generation::completion_tokens() const {
  int64_t total = 0;
  for (const SequenceState& sequence : sequences_) total += sequence.num_output_tokens;
  return total;
}

}  // namespace nucleus::server
