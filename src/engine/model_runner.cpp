#include "engine/model_runner.h"

namespace nucleus {

void ModelRunner::run(const SchedulerOutput& plan, StepResult& result) {
  batch_ = ForwardBatch{};
  result.sampling.clear();
  for (const ScheduledRequest& s : plan.scheduled) {
    Request& r = *s.request;
    const auto seq = static_cast<int32_t>(batch_.block_tables.size());
    batch_.block_tables.push_back(r.block_table);
    if (kv_.has_window_pool()) batch_.window_block_tables.push_back(r.window_block_table);
    const int64_t n_known = r.num_tokens();
    for (int64_t i = 0; i < s.num_tokens; ++i) {
      const int64_t pos = r.num_computed_tokens + i;
      const int32_t token = pos < n_known ? r.tokens[static_cast<size_t>(pos)] : r.draft.tokens[static_cast<size_t>(pos - n_known)];
      const bool output = pos + 1 >= n_known;  // the last known token, then each draft
      if (output && pos + 1 == n_known) result.sampling.push_back({&r, batch_.n_outputs(), 0});
      if (output) ++result.sampling.back().n_rows;
      batch_.add(token, static_cast<int32_t>(pos), seq, output);
    }
  }
  const int64_t n_vocab = model_.hparams().n_vocab;
  result.logits.resize(static_cast<size_t>(batch_.n_outputs() * n_vocab));
  if (batch_.n_tokens() > 0) model_.forward(batch_, kv_, result.logits.data(), n_threads_);
}

}  // namespace nucleus
