// Drafting for many sequences at once with one draft model.
//
// The draft's KV cache is a pool of blocks with a free list (grown when it runs out); each
// sequence owns a block table into it and remembers which tokens its blocks hold. propose() runs
// every sequence's pending tokens (what changed since its last call: the target's correction, the
// accepted drafts, or a whole prompt) in one forward pass, then each further draft position of all
// sequences in one more — γ draft-model passes per engine step however many requests speculate,
// where one runner per request took γ passes each. Kernels are batch-invariant, so every
// sequence's logits, and so its drafts, are bit-identical to drafting alone.
//
// Ownership: DraftModelProposer handles share one DraftBatch (shared_ptr) and each holds one
// sequence id. Calls are serialized by a mutex.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "speculative/proposer.h"

namespace nucleus {

class DraftBatch {
 public:
  DraftBatch(Model& draft, int n_threads);  // `draft` must outlive this
  DraftBatch(std::unique_ptr<Model> owned_draft, int n_threads);  // drafts with a model it owns

  Model& model() { return model_; }
  int32_t add_sequence();            // a new sequence holding nothing; its id
  void remove_sequence(int32_t id);  // frees its blocks; the id may be reused

  // One sequence's drafting in a propose() call. `context` is scratch for the sampler chain's
  // penalties (the sequence plus its drafts so far).
  struct Job {
    int32_t sequence = 0;
    const DraftRequest* request = nullptr;
    SamplerChain* chain = nullptr;
    std::vector<int32_t>* context = nullptr;
    DraftProposal* proposal = nullptr;
  };
  // Fills each job's proposal: up to request.num_draft_tokens tokens, each drawn from q = the
  // draft's distribution after the job's chain (greedy: its argmax, no probabilities), the draw
  // from uniform_at(seed, position, kDraftStream). Throws Error when the KV pool cannot grow.
  void propose(std::span<const Job> jobs);

  int64_t forward_passes() const;  // draft-model passes so far
  int64_t blocks_in_use() const;

 private:
  struct Sequence {
    bool live = false;
    std::vector<int32_t> block_table;  // [ceil(cached / block_size)] block ids
    std::vector<int32_t> cached;       // tokens whose K/V the blocks hold, by position
  };
  void truncate(Sequence& s, int64_t n_positions);  // keeps the first n_positions, frees the rest
  void reserve(Sequence& s, int64_t n_positions);   // blocks for n_positions, growing the pool
  void grow_pool();
  void propose_locked(std::span<const Job> jobs);
  void run(ForwardBatch& batch);  // forward into logits_, one row per output

  std::unique_ptr<Model> owned_;  // declared before model_, which may refer to it
  Model& model_;
  int n_threads_;
  std::unique_ptr<KvCache> kv_;
  std::vector<int32_t> free_blocks_;
  std::vector<Sequence> sequences_;  // indexed by id
  std::vector<float> logits_;        // [n_outputs, n_vocab] of the last pass
  int64_t forward_passes_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace nucleus
