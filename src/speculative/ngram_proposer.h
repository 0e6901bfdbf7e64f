// Prompt lookup (n-gram) proposer: find the sequence's last n tokens earlier in the prompt +
// output, for the longest n in [min_n, max_n] that occurs, and propose the tokens that followed
// that earlier occurrence. No model, no probabilities (a one-hot q): free drafts that pay off
// when the output repeats its input (summaries, code edits, quoting).
#pragma once
#include "speculative/proposer.h"

namespace nucleus {

class NgramProposer final : public Proposer {
 public:
  // Throws Error unless 1 ≤ min_n ≤ max_n.
  NgramProposer(int32_t min_n, int32_t max_n);
  std::string name() const override;
  void propose(const DraftRequest& request, DraftProposal& proposal) override;

 private:
  int32_t min_n_, max_n_;
};

}  // namespace nucleus
