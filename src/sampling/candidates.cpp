#include "sampling/candidates.h"

#include <cmath>
#include <numeric>

#include "sampling/row_math.h"

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

void Candidates::keep(std::span<const uint32_t> positions, bool result_sorted) {
  const size_t n = positions.size();
  scratch.ids.resize(n);
  scratch.logits.resize(n);
  for (size_t i = 0; i < n; ++i) {
    scratch.ids[i] = ids[positions[i]];
    scratch.logits[i] = logits[positions[i]];
  }
  ids.swap(scratch.ids);
  logits.swap(scratch.logits);
  if (has_probs) {
    scratch.probs.resize(n);
    for (size_t i = 0; i < n; ++i) scratch.probs[i] = probs[positions[i]];
    probs.swap(scratch.probs);
  }
  sorted = result_sorted;
}

void Candidates::keep_where(const std::vector<uint8_t>& flags) {
  // Branch-free compaction: every entry is written, only kept ones advance the output.
  size_t out = 0;
  for (size_t i = 0; i < size(); ++i) {
    ids[out] = ids[i];
    logits[out] = logits[i];
    out += flags[i] != 0;
  }
  if (has_probs) {
    size_t out_probs = 0;
    for (size_t i = 0; i < size(); ++i) {
      probs[out_probs] = probs[i];
      out_probs += flags[i] != 0;
    }
  }
  truncate(out);
}

namespace {
// The ranking of every stage: higher logit first, then lower id.
struct RanksBefore {
  const float* logits;
  const int32_t* ids;
  bool operator()(uint32_t a, uint32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && ids[a] < ids[b]);
  }
};
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
  // Selection first (O(n), rank key −logit), then a sort of the k survivors only.
  std::vector<float>& key = scratch.keys;
  key.resize(size());
  for (size_t i = 0; i < size(); ++i) key[i] = -logits[i];
  std::vector<uint32_t>& order = scratch.order;
  const PrefixSelection selection = select_count_prefix(key.data(), ids.data(), size(), k, order, scratch.selection);
  const std::span<uint32_t> kept(order.data(), selection.n_kept);
  std::sort(kept.begin(), kept.end(), RanksBefore{logits.data(), ids.data()});
  keep(kept, /*result_sorted=*/true);
}

float Candidates::max_logit() const { return max_value(logits.data(), size()); }

double Candidates::exp_probs() {
  const size_t n = size();
  probs.resize(n);
  has_probs = true;
  if (n == 0) return 0.0;
  const float max = max_logit();
  if (max == -INFINITY) {  // every candidate banned: fall back to uniform rather than 0/0
    std::fill(probs.begin(), probs.end(), 1.0f);
    return static_cast<double>(n);
  }
  return exp_shifted(logits.data(), max, probs.data(), n);  // exp(−inf) = 0 for banned tokens
}

double Candidates::probability_mass() {
  return has_probs ? blocked_sum(probs.data(), size()) : exp_probs();
}

void Candidates::softmax() {
  const double sum = exp_probs();
  if (sum <= 0.0) return;
  const double inverse = 1.0 / sum;
  for (float& p : probs) p = static_cast<float>(p * inverse);
}

}  // namespace nucleus
