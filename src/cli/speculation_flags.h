// The speculative-decoding flags shared by `generate` and `bench spec`: --draft MODEL, or
// --spec ngram | self:K, with --gamma G draft tokens per target pass; and the proposer they ask for.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/model_source.h"
#include "sampling/sampling_params.h"
#include "speculative/draft_batch.h"
#include "speculative/proposer.h"

namespace nucleus::cli {

struct SpeculationFlags {
  std::string draft_path;  // a draft model sharing the target's vocabulary
  std::string spec;        // "ngram" or "self:K"
  int32_t gamma = 4;
  bool enabled() const { return !draft_path.empty() || !spec.empty(); }
};

void add_speculation_flags(CLI::App& command, SpeculationFlags& flags);

// The proposer the flags describe (checked: exactly one kind, a well-formed self:K, the draft's
// vocabulary equal to the target's). Owns the draft model it loads (or the target's layer prefix
// for self:K); the proposers it makes all draft in one DraftBatch, so the engine runs the drafts
// of every speculating request in shared draft-model passes.
class ProposerFactory {
 public:
  ProposerFactory(const SpeculationFlags& flags, const LoadedModel& target);
  // A fresh proposer for one sequence (the first call fixes the draft's thread count).
  std::shared_ptr<Proposer> make(const SamplingParams& sampling, int n_threads);
  Model* draft_model() const { return draft_.model.get(); }  // null unless --draft
  std::string describe() const;                               // e.g. "ngram[1,3]", "self:4", "draft:PATH"

 private:
  SpeculationFlags flags_;
  const LoadedModel& target_;
  LoadedModel draft_;
  int64_t self_layers_ = 0;
  std::shared_ptr<DraftBatch> draft_batch_;  // over draft_ or (self:K) the target's first K layers, made on first use
};

}  // namespace nucleus::cli
