#include "explain/repetition.h"

#include <set>
#include <utility>
#include <vector>

namespace nucleus::explain {

namespace {

double repeated_ngram_share(std::span<const int32_t> tokens, size_t n) {
  if (tokens.size() < n) return 0.0;
  std::set<std::vector<int32_t>> seen;
  size_t repeated = 0, total = 0;
  for (size_t i = 0; i + n <= tokens.size(); ++i, ++total)
    if (!seen.emplace(tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.begin() + static_cast<std::ptrdiff_t>(i + n)).second)
      ++repeated;
  return static_cast<double>(repeated) / static_cast<double>(total);
}

double distinct_bigrams(std::span<const int32_t> tokens) {
  if (tokens.size() < 2) return 0.0;
  std::set<std::pair<int32_t, int32_t>> distinct;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) distinct.emplace(tokens[i], tokens[i + 1]);
  return static_cast<double>(distinct.size()) / static_cast<double>(tokens.size() - 1);
}

}  // namespace

RepetitionMeasures measure_repetition(std::span<const int32_t> tokens) {
  RepetitionMeasures m;
  m.num_tokens = static_cast<int64_t>(tokens.size());
  m.repeated_4gram_share = repeated_ngram_share(tokens, 4);
  m.distinct_2 = distinct_bigrams(tokens);
  // run[j] = length of the common run of tokens starting at i and at j (i < j), for the current i,
  // filled from the end: the longest repeated span is the largest run over all pairs. Ties go to
  // the earliest start, then the shortest period.
  const size_t size = tokens.size();
  std::vector<int64_t> run(size + 1, 0), next(size + 1, 0);
  for (size_t i = size; i-- > 0;) {
    for (size_t j = size; j-- > i + 1;) {
      next[j] = tokens[i] == tokens[j] ? run[j + 1] + 1 : 0;
      if (next[j] > m.longest_loop || (next[j] == m.longest_loop && next[j] > 0)) {
        m.longest_loop = next[j];
        m.loop_start = static_cast<int64_t>(i);
        m.loop_period = static_cast<int64_t>(j - i);
      }
    }
    std::swap(run, next);
  }
  return m;
}

}  // namespace nucleus::explain
