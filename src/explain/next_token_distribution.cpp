#include "explain/next_token_distribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sampling/sampler.h"

namespace nucleus::explain {

NextTokenDistribution next_token_distribution(const float* logits, int64_t n_vocab, const SamplingParams& params,
                                              std::span<const int32_t> context, const Tokenizer& tokenizer, int64_t top_n) {
  // Raw probabilities: softmax in double of the unmodified row.
  const float max_logit = *std::max_element(logits, logits + n_vocab);
  std::vector<double> raw(static_cast<size_t>(n_vocab));
  double sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += raw[static_cast<size_t>(i)] = std::exp(static_cast<double>(logits[i] - max_logit));
  for (double& p : raw) p /= sum;

  // What the chain leaves (sampler.h): probs normalized over the survivors.
  SamplingParams chain_params = params;
  if (!chain_params.seed) chain_params.seed = 0;  // no draw happens; skip the OS entropy
  SamplerChain chain(chain_params);
  std::vector<double> kept(static_cast<size_t>(n_vocab), 0.0);  // 0 = trimmed
  NextTokenDistribution result;
  result.greedy = chain.greedy();
  const Candidates& survivors = chain.distribution(logits, n_vocab, SamplingContext{context, 0});
  if (chain.greedy()) {
    kept[static_cast<size_t>(argmax_token(survivors))] = 1.0;
  } else {
    for (size_t j = 0; j < survivors.size(); ++j) kept[static_cast<size_t>(survivors.ids[j])] = std::max(survivors.probs[j], 1e-30f);
  }
  for (int64_t i = 0; i < n_vocab; ++i)
    if (kept[static_cast<size_t>(i)] > 0) {
      ++result.kept_count;
      result.kept_raw_mass += raw[static_cast<size_t>(i)];
    }

  std::vector<int32_t> order(static_cast<size_t>(n_vocab));
  std::iota(order.begin(), order.end(), 0);
  const auto n_top = static_cast<size_t>(std::clamp<int64_t>(top_n, 1, n_vocab));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_top), order.end(), [&](int32_t a, int32_t b) {
    return raw[static_cast<size_t>(a)] != raw[static_cast<size_t>(b)] ? raw[static_cast<size_t>(a)] > raw[static_cast<size_t>(b)] : a < b;
  });
  for (size_t r = 0; r < n_top; ++r) {
    const int32_t id = order[r];
    const double p = kept[static_cast<size_t>(id)];
    result.top.push_back({id, tokenizer.token_to_piece(id, /*render_special=*/true), raw[static_cast<size_t>(id)], p > 1e-29 ? p : 0.0,
                          p > 0});
  }
  return result;
}

}  // namespace nucleus::explain
