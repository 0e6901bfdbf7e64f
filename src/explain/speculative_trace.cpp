#include "explain/speculative_trace.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/sequence_runner.h"
#include "sampling/sampler.h"
#include "speculative/speculative_generator.h"

namespace nucleus::explain {

namespace {

constexpr int kRuns = 3;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Plain decoding of the same request: one forward step per token, the same chain and seed.
double time_plain_decode(Model& model, const std::vector<int32_t>& prompt, const SamplingParams& params, int64_t max_tokens,
                         int n_threads) {
  SequenceRunner runner(model, static_cast<int64_t>(prompt.size()) + max_tokens, n_threads);
  SamplerChain chain(params);
  const int64_t n_vocab = model.hparams().n_vocab;
  std::vector<int32_t> sequence = prompt;
  std::vector<float> logits = runner.feed(prompt);  // the prefill is not timed, as in the speculative run
  const auto start = std::chrono::steady_clock::now();
  for (int64_t position = 0; position < max_tokens; ++position) {
    const int32_t token = chain.sample(logits.data(), n_vocab, SamplingContext{sequence, static_cast<uint64_t>(position)});
    sequence.push_back(token);
    if (position + 1 < max_tokens) logits = runner.feed({token});
  }
  return seconds_since(start);
}

}  // namespace

const char* draft_status_name(DraftStatus status) {
  switch (status) {
    case DraftStatus::accepted: return "accepted";
    case DraftStatus::rejected: return "rejected";
    case DraftStatus::corrected: return "corrected";
    case DraftStatus::bonus: return "bonus";
  }
  return "?";
}

SpeedupPoint theoretical_speedup(double alpha, int32_t gamma, double cost_ratio) {
  SpeedupPoint point;
  point.alpha = alpha;
  const double g = static_cast<double>(gamma);
  point.tokens_per_pass = alpha >= 1.0 ? g + 1.0 : (1.0 - std::pow(alpha, g + 1.0)) / (1.0 - alpha);
  point.speedup = point.tokens_per_pass / (g * cost_ratio + 1.0);
  return point;
}

SpeculativeTrace trace_speculative(Model& target, Proposer& proposer, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                                   const SamplingParams& params, int32_t gamma, int64_t max_tokens, int n_threads) {
  SpeculativeTrace trace;
  trace.proposer = proposer.name();
  trace.gamma = gamma;
  const int64_t n_ctx = static_cast<int64_t>(prompt.size()) + max_tokens;
  SpeculativeGenerator generator(target, proposer, params, gamma, n_ctx, n_threads);
  generator.start(prompt, max_tokens, *params.seed);
  IncrementalDetokenizer detokenizer(tokenizer);
  const auto start = std::chrono::steady_clock::now();
  while (!generator.finished()) {
    const int64_t accepted_before = generator.stats().num_accepted;
    const std::span<const int32_t> added = generator.step();
    if (added.empty()) break;
    const std::vector<int32_t>& drafts = generator.last_draft_tokens();
    SpeculativePass pass;
    pass.num_drafted = static_cast<int32_t>(drafts.size());
    pass.num_accepted = static_cast<int32_t>(generator.stats().num_accepted - accepted_before);
    for (int32_t i = 0; i < pass.num_drafted; ++i)
      pass.tokens.push_back({drafts[static_cast<size_t>(i)], tokenizer.token_to_piece(drafts[static_cast<size_t>(i)]),
                             i < pass.num_accepted ? DraftStatus::accepted : DraftStatus::rejected});
    const int32_t own = added.back();  // the correction of the first rejection, or the bonus token
    pass.tokens.push_back({own, tokenizer.token_to_piece(own),
                           pass.num_accepted < pass.num_drafted ? DraftStatus::corrected : DraftStatus::bonus});
    pass.running_alpha = generator.stats().acceptance_rate();
    for (int32_t token : added) trace.text += detokenizer.push(token);
    trace.passes.push_back(std::move(pass));
  }
  trace.text += detokenizer.flush();
  trace.speculative_seconds = seconds_since(start);
  const SpeculativeStats& stats = generator.stats();
  trace.num_generated = generator.n_generated();
  trace.alpha = stats.acceptance_rate();
  trace.tokens_per_pass = stats.tokens_per_pass();
  // c: what one drafted token costs relative to one target pass (0 for n-gram lookup, in effect).
  if (stats.num_proposed > 0 && stats.num_passes > 0 && stats.target_seconds > 0)
    trace.cost_ratio = (stats.draft_seconds / static_cast<double>(stats.num_proposed)) /
                       (stats.target_seconds / static_cast<double>(stats.num_passes));
  // Timings of tiny models on a shared machine are noisy: both sides take the best of kRuns runs
  // (the speculative reruns replay the same passes: same seed, same positions).
  for (int run = 1; run < kRuns; ++run) {
    generator.start(prompt, max_tokens, *params.seed);
    const auto rerun_start = std::chrono::steady_clock::now();
    while (!generator.finished()) generator.step();
    trace.speculative_seconds = std::min(trace.speculative_seconds, seconds_since(rerun_start));
  }
  trace.plain_seconds = time_plain_decode(target, prompt, params, max_tokens, n_threads);
  for (int run = 1; run < kRuns; ++run)
    trace.plain_seconds = std::min(trace.plain_seconds, time_plain_decode(target, prompt, params, max_tokens, n_threads));
  trace.measured_speedup = trace.speculative_seconds > 0 ? trace.plain_seconds / trace.speculative_seconds : 0.0;
  for (int i = 0; i <= 50; ++i) trace.theory.push_back(theoretical_speedup(i / 50.0, gamma, trace.cost_ratio));
  return trace;
}

}  // namespace nucleus::explain
