#include "engine/beam_search_runner.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "engine/sequence_group_runner.h"

namespace nucleus {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

std::vector<BeamHypothesis> run_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamSearchParams& params,
                                            int n_threads, BeamSearchTiming* timing,
                                            std::shared_ptr<ConstraintTables> constraint) {
  if (prompt.empty()) throw Error("beam search: the prompt is empty");
  const int64_t n_vocab = model.hparams().n_vocab;
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  const int64_t budget = std::max<int32_t>(params.max_new_tokens, 0);
  SequenceGroupRunner group(model, SequenceGroupRunner::blocks_needed(n_prompt, budget, std::max<int32_t>(params.num_beams, 1), 16),
                            n_prompt + budget, n_threads);
  const auto prefill_start = std::chrono::steady_clock::now();
  std::vector<SequenceGroupRunner::SequenceId> live = {group.prefill(prompt)};
  if (timing) timing->prefill_seconds = seconds_since(prefill_start);

  // Under a constraint, beam i's matcher has taken exactly beam i's tokens. A child's matcher replays
  // its parent's tokens and its own: a few thousand accept_token calls over a whole search, and no
  // matcher state is shared between beams.
  std::vector<std::vector<int32_t>> generated = {{}};  // [live beam] its tokens so far
  std::vector<std::unique_ptr<TokenConstraint>> matchers;
  auto mask_rows = [&](float* out) {
    if (!constraint) return;
    matchers.clear();
    for (size_t b = 0; b < generated.size(); ++b) {
      auto matcher = std::make_unique<TokenConstraint>(constraint);
      for (int32_t token : generated[b])
        if (!matcher->accept_token(token)) throw Error("internal: a beam left its grammar");
      matcher->mask_logits(out + static_cast<int64_t>(b) * n_vocab, n_vocab);
      matchers.push_back(std::move(matcher));
    }
  };

  // Beams extend live sequences: fork every child first (sharing blocks), then drop the old beams,
  // so only the partial last block of a beam with several children is ever copied.
  const auto decode_start = std::chrono::steady_clock::now();
  auto next_token_logits = [&](std::span<const int32_t> parents, std::span<const int32_t> tokens, float* out) {
    if (parents.empty()) {
      std::copy(group.logits().begin(), group.logits().begin() + n_vocab, out);
      mask_rows(out);
      return;
    }
    std::vector<SequenceGroupRunner::SequenceId> children;
    std::vector<std::vector<int32_t>> child_tokens;
    for (size_t i = 0; i < parents.size(); ++i) {
      const auto parent = static_cast<size_t>(parents[i]);
      children.push_back(group.fork(live[parent]));
      child_tokens.push_back(generated[parent]);
      child_tokens.back().push_back(tokens[i]);
    }
    for (SequenceGroupRunner::SequenceId old : live) group.release(old);
    live = std::move(children);
    generated = std::move(child_tokens);
    const std::vector<float>& logits = group.step(live, tokens);
    std::copy(logits.begin(), logits.end(), out);
    mask_rows(out);
  };
  std::vector<BeamHypothesis> results = beam_search(params, prompt, n_vocab, next_token_logits);
  if (timing) timing->decode_seconds = seconds_since(decode_start);
  return results;
}

}  // namespace nucleus
