// Log-probabilities of generated tokens (OpenAI `logprobs` / `top_logprobs`).
//
// Two sources, selectable:
//   raw        the model's own distribution, log_softmax(logits) over the whole vocabulary — OpenAI's
//              and vLLM's default; independent of temperature, penalties and truncation.
//   processed  the distribution the draw used, after every stage of the chain (renormalized); tokens
//              a truncation dropped have −inf. Under greedy decoding: the softmax of the logits after
//              bias and penalties.
// The alternatives are the top_logprobs most likely tokens of that distribution, most likely first,
// lower id first at equal values. The chosen token is reported whether or not it is among them.
#pragma once
#include <cstdint>
#include <vector>

#include "sampling/candidates.h"

namespace nucleus {

enum class LogprobsSource { raw, processed };

struct LogprobsParams {
  int32_t top_logprobs = -1;  // < 0: no logprobs; 0: only the chosen token's; K: also K alternatives
  LogprobsSource source = LogprobsSource::raw;
  bool enabled() const { return top_logprobs >= 0; }
};

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // [≤ top_logprobs] descending
};

// From a raw logits row [n_vocab].
TokenLogprobs logprobs_from_logits(const float* logits, int64_t n_vocab, int32_t chosen, int32_t top_logprobs);
// From a chain's final distribution (SamplerChain::distribution); absent tokens are −inf.
TokenLogprobs logprobs_from_candidates(const Candidates& candidates, int32_t chosen, int32_t top_logprobs);

}  // namespace nucleus
