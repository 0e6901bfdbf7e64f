// Panel 1's data: a model's next-token distribution before and after the sampler chain, for the
// most probable tokens. Pure function of a logits row: no model, no state.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sampling/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::explain {

struct TokenProbability {
  int32_t id = 0;
  std::string text;      // the token's piece (may be part of a UTF-8 character)
  double raw_prob = 0;   // softmax of the raw logits (temperature 1, nothing trimmed)
  double prob = 0;       // what the draw uses: after every stage, renormalized over the kept tokens; 0 when trimmed
  bool kept = false;     // survived temperature, top-k, top-p, min-p, typical-p
};

struct NextTokenDistribution {
  std::vector<TokenProbability> top;  // [top_n] by descending raw probability (lower id first on ties)
  int64_t kept_count = 0;             // tokens of the whole vocabulary that survive the chain
  double kept_raw_mass = 0;           // Σ raw_prob over the kept tokens
  bool greedy = false;                // temperature 0: only the argmax is kept
};

// logits: [n_vocab] the raw row; `context` is the sequence so far (what penalties see).
NextTokenDistribution next_token_distribution(const float* logits, int64_t n_vocab, const SamplingParams& params,
                                              std::span<const int32_t> context, const Tokenizer& tokenizer, int64_t top_n);

}  // namespace nucleus::explain
