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
                                            int n_threads, BeamSearchTiming* timing) {
  if (prompt.empty()) throw Error("beam search: the prompt is empty");
  const int64_t n_vocab = model.hparams().n_vocab;
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  const int64_t budget = std::max<int32_t>(params.max_new_tokens, 0);
  SequenceGroupRunner group(model, SequenceGroupRunner::blocks_needed(n_prompt, budget, std::max<int32_t>(params.num_beams, 1), 16),
                            n_prompt + budget, n_threads);
  const auto prefill_start = std::chrono::steady_clock::now();
  std::vector<SequenceGroupRunner::SequenceId> live = {group.prefill(prompt)};
  if (timing) timing->prefill_seconds = seconds_since(prefill_start);

  // Beams extend live sequences: fork every child first (sharing blocks), then drop the old beams,
  // so only the partial last block of a beam with several children is ever copied.
  const auto decode_start = std::chrono::steady_clock::now();
  auto next_token_logits = [&](std::span<const int32_t> parents, std::span<const int32_t> tokens, float* out) {
    if (parents.empty()) {
      std::copy(group.logits().begin(), group.logits().begin() + n_vocab, out);
      return;
    }
    std::vector<SequenceGroupRunner::SequenceId> children;
    for (int32_t parent : parents) children.push_back(group.fork(live[static_cast<size_t>(parent)]));
    for (SequenceGroupRunner::SequenceId old : live) group.release(old);
    live = std::move(children);
    const std::vector<float>& logits = group.step(live, tokens);
    std::copy(logits.begin(), logits.end(), out);
  };
  std::vector<BeamHypothesis> results = beam_search(params, prompt, n_vocab, next_token_logits);
  if (timing) timing->decode_seconds = seconds_since(decode_start);
  return results;
}

}  // namespace nucleus
