#include "engine/model_runner.h"

#include <string>

#include "core/error.h"

namespace nucleus {

int32_t ModelRunner::state_slot(Request& request) {
  if (slot_owner_.empty()) slot_owner_.assign(static_cast<size_t>(kv_.shape().recurrent.num_slots), nullptr);
  int32_t free_slot = -1, reclaimable = -1;
  for (size_t slot = 0; slot < slot_owner_.size(); ++slot) {
    if (slot_owner_[slot] == &request) return static_cast<int32_t>(slot);
    if (!slot_owner_[slot] && free_slot < 0) free_slot = static_cast<int32_t>(slot);
    if (slot_owner_[slot] && slot_owner_[slot]->status != RequestStatus::running && reclaimable < 0)
      reclaimable = static_cast<int32_t>(slot);
  }
  const int32_t slot = free_slot >= 0 ? free_slot : reclaimable;
  if (slot < 0)
    throw Error("internal: more running requests than recurrent state slots (" + std::to_string(slot_owner_.size()) + ")");
  slot_owner_[static_cast<size_t>(slot)] = &request;
  return slot;
}

void ModelRunner::release_state(const Request& request) {
  for (Request*& owner : slot_owner_)
    if (owner == &request) owner = nullptr;
}

void ModelRunner::restore_state(const Request& request) {
  for (size_t slot = 0; slot < slot_owner_.size(); ++slot)
    if (slot_owner_[slot] == &request) {
      kv_.restore_state(static_cast<int64_t>(slot), request.state_before_pass);
      return;
    }
  throw Error("internal: restoring the state of a request that holds no state slot");
}

int64_t ModelRunner::num_state_slots_used() const {
  int64_t n = 0;
  for (const Request* owner : slot_owner_) n += owner != nullptr;
  return n;
}

void ModelRunner::run(const SchedulerOutput& plan, StepResult& result) {
  batch_ = ForwardBatch{};
  result.sampling.clear();
  for (const ScheduledRequest& s : plan.scheduled) {
    Request& r = *s.request;
    const auto seq = static_cast<int32_t>(batch_.block_tables.size());
    batch_.block_tables.push_back(r.block_table);
    if (kv_.has_window_pool()) batch_.window_block_tables.push_back(r.window_block_table);
    if (kv_.has_recurrent_state()) {
      const int32_t slot = state_slot(r);
      batch_.state_slots.push_back(slot);
      if (!r.draft.tokens.empty()) kv_.save_state(slot, r.state_before_pass);  // a verification pass
    }
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
