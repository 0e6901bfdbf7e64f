#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nucleus {

namespace {
// Positions of the k largest values (ties: lower id first), largest first. O(n + k log k).
std::vector<uint32_t> top_positions(const float* values, const int32_t* ids, size_t n, size_t k) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  k = std::min(k, n);
  auto before = [&](uint32_t a, uint32_t b) {
    const int32_t id_a = ids ? ids[a] : static_cast<int32_t>(a), id_b = ids ? ids[b] : static_cast<int32_t>(b);
    return values[a] > values[b] || (values[a] == values[b] && id_a < id_b);
  };
  const auto kth = order.begin() + static_cast<std::ptrdiff_t>(k);
  if (k < n) std::nth_element(order.begin(), kth, order.end(), before);
  std::sort(order.begin(), kth, before);
  order.resize(k);
  return order;
}
}  // namespace

TokenLogprobs logprobs_from_logits(const float* logits, int64_t n_vocab, int32_t chosen, int32_t top_logprobs) {
  // log_softmax: l − (max + log Σ exp(l − max)), summed in double.
  float max = -INFINITY;
  for (int64_t i = 0; i < n_vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_normalizer = max + std::log(sum);
  auto logprob = [&](int64_t i) { return static_cast<float>(logits[i] - log_normalizer); };

  TokenLogprobs result;
  result.chosen = {chosen, logprob(chosen)};
  if (top_logprobs > 0)
    for (uint32_t i : top_positions(logits, nullptr, static_cast<size_t>(n_vocab), static_cast<size_t>(top_logprobs)))
      result.top.push_back({static_cast<int32_t>(i), logprob(i)});
  return result;
}

TokenLogprobs logprobs_from_candidates(const Candidates& c, int32_t chosen, int32_t top_logprobs) {
  // probs ∝ exp(logits) (normalized or not): log p = log(probs / Σ probs).
  double total = 0.0;
  for (float p : c.probs) total += p;
  auto logprob = [&](size_t i) { return static_cast<float>(std::log(c.probs[i] / total)); };

  TokenLogprobs result;
  result.chosen = {chosen, -INFINITY};
  for (size_t i = 0; i < c.size(); ++i)
    if (c.ids[i] == chosen) result.chosen.logprob = logprob(i);
  if (top_logprobs > 0)
    for (uint32_t i : top_positions(c.logits.data(), c.ids.data(), c.size(), static_cast<size_t>(top_logprobs)))
      result.top.push_back({c.ids[i], logprob(i)});
  return result;
}

}  // namespace nucleus
