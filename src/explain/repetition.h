// Panel 1's degeneration measures (Holtzman et al. 2020, "neural text degeneration"): how much an
// output repeats itself, on its token ids. Plain functions of one sequence; no model involved.
#pragma once
#include <cstdint>
#include <span>

namespace nucleus::explain {

struct RepetitionMeasures {
  int64_t num_tokens = 0;
  // Of the output's 4-grams, the share that already occurred earlier in it (0 without any 4-gram).
  double repeated_4gram_share = 0.0;
  // Distinct bigrams over all bigrams (1: no bigram repeats; 0 without any bigram).
  double distinct_2 = 0.0;
  // The longest span of tokens that occurs twice in the output — a phrase the text comes back to.
  // The two occurrences may overlap: a back-to-back loop "A B A B A B" recurs as "A B A B" two
  // tokens later, "the the the" as "the the" one token later. 0 when no token repeats.
  int64_t longest_loop = 0;
  int64_t loop_period = 0;  // tokens from the span's first occurrence to its second
  int64_t loop_start = 0;   // index of the first occurrence's first token
};

RepetitionMeasures measure_repetition(std::span<const int32_t> tokens);

}  // namespace nucleus::explain
