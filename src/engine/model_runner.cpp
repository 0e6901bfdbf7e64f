#include "engine/model_runner.h"

namespace nucleus {

void ModelRunner::run(const SchedulerOutput& plan, StepResult& result) {
  batch_ = ForwardBatch{};
  result.sampling.clear();
  for (const ScheduledRequest& s : plan.scheduled) {
    Request& r = *s.request;
    const auto seq = static_cast<int32_t>(batch_.block_tables.size());
    batch_.block_tables.push_back(r.block_table);
    for (int64_t i = 0; i < s.num_tokens; ++i) {
      const int64_t pos = r.num_computed_tokens + i;
      const bool last_known = pos + 1 == r.num_tokens();
      batch_.add(r.tokens[static_cast<size_t>(pos)], static_cast<int32_t>(pos), seq, last_known);
      if (last_known) result.sampling.push_back(&r);
    }
  }
  const int64_t n_vocab = model_.hparams().n_vocab;
  result.logits.resize(static_cast<size_t>(batch_.n_outputs() * n_vocab));
  if (batch_.n_tokens() > 0) model_.forward(batch_, kv_, result.logits.data(), n_threads_);
}

}  // namespace nucleus
