#include "speculative/ngram_proposer.h"

#include <algorithm>

#include "core/error.h"

namespace nucleus {

NgramProposer::NgramProposer(int32_t min_n, int32_t max_n) : min_n_(min_n), max_n_(max_n) {
  if (min_n < 1 || max_n < min_n) throw Error("ngram proposer: need 1 <= min_n <= max_n");
}

std::string NgramProposer::name() const {
  return "ngram[" + std::to_string(min_n_) + "," + std::to_string(max_n_) + "]";
}

void NgramProposer::propose(const DraftRequest& request, DraftProposal& proposal) {
  proposal.clear();
  const std::span<const int32_t> tokens = request.tokens;
  const auto length = static_cast<int64_t>(tokens.size());
  if (request.num_draft_tokens <= 0) return;
  for (int64_t n = std::min<int64_t>(max_n_, length - 1); n >= min_n_; --n) {
    const std::span<const int32_t> suffix = tokens.subspan(static_cast<size_t>(length - n));
    // The earliest occurrence: it has the longest continuation (a later one may run into the suffix).
    for (int64_t start = 0; start + n < length; ++start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t follow = start + n;
      const int64_t count = std::min<int64_t>(request.num_draft_tokens, length - follow);
      proposal.tokens.assign(tokens.begin() + follow, tokens.begin() + follow + count);
      return;
    }
  }
}

}  // namespace nucleus
