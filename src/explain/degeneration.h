// Panel 1's degeneration comparison: one context continued by greedy decoding, beam search and
// sampling, each with its repetition measures (repetition.h) — greedy and beams tend to loop on
// open-ended text, sampling does not (Holtzman et al. 2020).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "explain/repetition.h"
#include "model/model.h"
#include "sampling/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::explain {

struct Continuation {
  std::vector<int32_t> tokens;
  std::string text;
  double score = 0.0;  // beams: sum_logprobs / length^length_penalty; greedy and samples: sum of log p
  uint64_t seed = 0;   // samples: the seed used
};

struct DecodedOutput {
  std::string method;  // "greedy", "beam", "sampling"
  Continuation continuation;
  RepetitionMeasures repetition;
};

// Continues `prompt` (which fits the context with max_tokens more) for up to max_tokens tokens
// with `params`, stopping at end of generation, or also at a sentence end (. ! ? newline) when
// `stop_at_sentence_end`. params.seed must be set.
Continuation generate_continuation(Model& model, const Tokenizer& tokenizer, std::vector<int32_t> prompt, const SamplingParams& params,
                                   int64_t max_tokens, bool stop_at_sentence_end, int n_threads);

// Greedy, beam search with num_beams (its best beam) and sampling with `sampling` (seed set), each
// for up to max_tokens tokens.
std::vector<DecodedOutput> compare_decoders(Model& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                                            const SamplingParams& sampling, int32_t num_beams, int64_t max_tokens, int n_threads);

}  // namespace nucleus::explain
