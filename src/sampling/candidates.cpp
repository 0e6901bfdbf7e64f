#include "sampling/candidates.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nucleus {

void Candidates::assign(const float* row, int64_t n_vocab) {
  ids.resize(static_cast<size_t>(n_vocab));
  std::iota(ids.begin(), ids.end(), 0);
  logits.assign(row, row + n_vocab);
  probs.clear();
  sorted = false;
  has_probs = false;
}

void Candidates::truncate(size_t n) {
  ids.resize(std::min(n, ids.size()));
  logits.resize(ids.size());
  if (has_probs) probs.resize(ids.size());
}

namespace {
// Reorders the parallel arrays by the index permutation `order` (first `keep` entries).
void apply_order(Candidates& c, const std::vector<uint32_t>& order, size_t keep) {
  std::vector<int32_t> ids(keep);
  std::vector<float> logits(keep), probs;
  if (c.has_probs) probs.resize(keep);
  for (size_t i = 0; i < keep; ++i) {
    ids[i] = c.ids[order[i]];
    logits[i] = c.logits[order[i]];
    if (c.has_probs) probs[i] = c.probs[order[i]];
  }
  c.ids = std::move(ids);
  c.logits = std::move(logits);
  c.probs = std::move(probs);
}
}  // namespace

void Candidates::sort_descending() {
  if (sorted) return;
  partial_sort_descending(size());
}

void Candidates::partial_sort_descending(size_t k) {
  k = std::min(k, size());
  if (sorted) {
    truncate(k);
    return;
  }
  std::vector<uint32_t> order(size());
  std::iota(order.begin(), order.end(), 0u);
  auto before = [this](uint32_t a, uint32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && ids[a] < ids[b]);
  };
  if (k < size()) std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), before);
  else std::sort(order.begin(), order.end(), before);
  apply_order(*this, order, k);
  sorted = true;
}

void Candidates::softmax() {
  probs.resize(size());
  if (size() == 0) return;
  float max = -INFINITY;
  for (float l : logits) max = std::max(max, l);
  double sum = 0.0;
  for (size_t i = 0; i < size(); ++i) {
    probs[i] = std::isinf(logits[i]) && logits[i] < 0 ? 0.0f : std::exp(logits[i] - max);
    sum += probs[i];
  }
  for (float& p : probs) p = static_cast<float>(p / sum);
  has_probs = true;
}

}  // namespace nucleus
