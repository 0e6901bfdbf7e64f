#include "speculative/draft_batch.h"

#include "core/common_prefix.h"

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"
#include "speculative/rejection_sampler.h"

namespace nucleus {

namespace {
constexpr int64_t kBlockSize = 16;
constexpr int64_t kInitialBlocks = 64;
}  // namespace

DraftBatch::DraftBatch(Model& draft, int n_threads) : model_(draft), n_threads_(n_threads) {}

DraftBatch::DraftBatch(std::unique_ptr<Model> owned_draft, int n_threads)
    : owned_(std::move(owned_draft)), model_(*owned_), n_threads_(n_threads) {}

int32_t DraftBatch::add_sequence() {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < sequences_.size(); ++i)
    if (!sequences_[i].live) {
      sequences_[i].live = true;
      return static_cast<int32_t>(i);
    }
  sequences_.push_back(Sequence{true, {}, {}});
  return static_cast<int32_t>(sequences_.size() - 1);
}

void DraftBatch::remove_sequence(int32_t id) {
  std::lock_guard lock(mutex_);
  Sequence& s = sequences_.at(static_cast<size_t>(id));
  truncate(s, 0);
  s.live = false;
}

int64_t DraftBatch::forward_passes() const {
  std::lock_guard lock(mutex_);
  return forward_passes_;
}

int64_t DraftBatch::blocks_in_use() const {
  std::lock_guard lock(mutex_);
  const int64_t total = kv_ ? kv_->shape().num_blocks : 0;
  return total - static_cast<int64_t>(free_blocks_.size());
}

void DraftBatch::truncate(Sequence& s, int64_t n_positions) {
  s.cached.resize(static_cast<size_t>(std::min<int64_t>(n_positions, static_cast<int64_t>(s.cached.size()))));
  const auto keep = static_cast<size_t>((n_positions + kBlockSize - 1) / kBlockSize);
  while (s.block_table.size() > keep) {
    free_blocks_.push_back(s.block_table.back());
    s.block_table.pop_back();
  }
}

void DraftBatch::grow_pool() {
  const HParams& hp = model_.hparams();
  const int64_t old_blocks = kv_ ? kv_->shape().num_blocks : 0;
  const int64_t new_blocks = std::max(kInitialBlocks, 2 * old_blocks);
  auto bigger = std::make_unique<KvCache>(KvCacheShape{hp.n_layer, new_blocks, kBlockSize, hp.kv_dim()});
  if (kv_)
    for (int64_t l = 0; l < hp.n_layer; ++l) bigger->copy_blocks(*kv_, l, 0, 0, old_blocks);
  for (int64_t b = new_blocks - 1; b >= old_blocks; --b) free_blocks_.push_back(static_cast<int32_t>(b));
  kv_ = std::move(bigger);
}

void DraftBatch::reserve(Sequence& s, int64_t n_positions) {
  const auto need = static_cast<size_t>((n_positions + kBlockSize - 1) / kBlockSize);
  while (s.block_table.size() < need) {
    if (free_blocks_.empty()) grow_pool();
    s.block_table.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
}

void DraftBatch::run(ForwardBatch& batch) {
  logits_.resize(static_cast<size_t>(batch.n_outputs() * model_.hparams().n_vocab));
  model_.forward(batch, *kv_, logits_.data(), n_threads_);
  ++forward_passes_;
}

void DraftBatch::propose(std::span<const Job> jobs) {
  std::lock_guard lock(mutex_);
  try {
    propose_locked(jobs);
  } catch (...) {
    // A pass that failed leaves the sequences' caches unknown: they start over next time.
    for (const Job& job : jobs) truncate(sequences_.at(static_cast<size_t>(job.sequence)), 0);
    throw;
  }
}

void DraftBatch::propose_locked(std::span<const Job> jobs) {
  const int64_t n_vocab = model_.hparams().n_vocab;
  // First pass: each sequence's tokens its KV does not hold yet. Keep at least the last token
  // out of the cache: its logits are the first draft's distribution.
  std::vector<const Job*> active;  // jobs still drafting, in output-row order
  ForwardBatch batch;
  for (const Job& job : jobs) {
    job.proposal->clear();
    const DraftRequest& request = *job.request;
    if (request.num_draft_tokens <= 0 || request.tokens.empty()) continue;
    Sequence& s = sequences_.at(static_cast<size_t>(job.sequence));
    const auto n = static_cast<int64_t>(request.tokens.size());
    const int64_t kept = common_prefix_length(s.cached, request.tokens, n - 1);
    truncate(s, kept);
    reserve(s, n);
    const auto seq = static_cast<int32_t>(batch.block_tables.size());
    batch.block_tables.push_back(s.block_table);
    for (int64_t p = kept; p < n; ++p) batch.add(request.tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), seq, p + 1 == n);
    s.cached.assign(request.tokens.begin(), request.tokens.end());
    job.context->assign(request.tokens.begin(), request.tokens.end());
    active.push_back(&job);
  }
  // Then one draft position of every sequence per pass.
  for (int32_t d = 0; !active.empty(); ++d) {
    run(batch);
    batch = ForwardBatch{};
    std::vector<const Job*> still;
    for (size_t row = 0; row < active.size(); ++row) {
      const Job& job = *active[row];
      const float* logits = logits_.data() + row * static_cast<size_t>(n_vocab);
      const uint64_t position = job.request->first_position + static_cast<uint64_t>(d);
      const SamplingContext context{*job.context, position};
      DraftProposal& proposal = *job.proposal;
      int32_t token = 0;
      if (job.chain->greedy()) {
        token = job.chain->sample(logits, n_vocab, context);
      } else {
        const Candidates& q = job.chain->distribution(logits, n_vocab, context);
        const size_t at = proposal.probs.size();
        proposal.probs.resize(at + static_cast<size_t>(n_vocab), 0.0f);
        for (size_t j = 0; j < q.size(); ++j) proposal.probs[at + static_cast<size_t>(q.ids[j])] = q.probs[j];
        token = draw_from_weights(proposal.probs.data() + at, n_vocab, uniform_at(job.request->seed, position, kDraftStream));
      }
      proposal.tokens.push_back(token);
      job.context->push_back(token);
      if (d + 1 >= job.request->num_draft_tokens) continue;  // the last draft is never fed
      Sequence& s = sequences_[static_cast<size_t>(job.sequence)];
      const auto pos = static_cast<int64_t>(s.cached.size());
      reserve(s, pos + 1);
      batch.block_tables.push_back(s.block_table);
      batch.add(token, static_cast<int32_t>(pos), static_cast<int32_t>(batch.block_tables.size() - 1), true);
      s.cached.push_back(token);
      still.push_back(&job);
    }
    active = std::move(still);
  }
}

}  // namespace nucleus
