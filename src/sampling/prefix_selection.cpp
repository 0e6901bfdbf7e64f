#include "sampling/prefix_selection.h"

#include <algorithm>
#include <cmath>

#include "sampling/row_math.h"

namespace nucleus {

namespace {

constexpr int kNumBuckets = 2048;

// Fills scratch.bucket_of [n] and the per-bucket counts (and masses when weight is given).
void histogram(const float* key, const float* weight, size_t n, PrefixSelectionScratch& scratch) {
  // Bucket b holds keys in [key_min + b·width, key_min + (b+1)·width); +inf keys go to the last
  // bucket, −inf and NaN keys to the first.
  float key_min, key_max;
  finite_range(key, n, key_min, key_max);
  const float range = key_max - key_min;
  const float scale = static_cast<float>(kNumBuckets) / range;
  const bool one_bucket = !(range > 0.0f) || !std::isfinite(scale);

  std::vector<uint16_t>& bucket_of = scratch.bucket_of;
  bucket_of.resize(n);
  if (one_bucket) {
    std::fill(bucket_of.begin(), bucket_of.end(), uint16_t{0});
  } else {
    constexpr float kLast = static_cast<float>(kNumBuckets - 1);
    for (size_t i = 0; i < n; ++i) {  // branch-free, so it vectorizes
      const float offset = key[i] - key_min;
      float b = offset * scale;
      b = offset < range ? (b < kLast ? b : kLast) : kLast;  // +inf keys; rounding up to kNumBuckets
      b = offset > 0.0f ? b : 0.0f;                          // −inf keys, NaN
      bucket_of[i] = static_cast<uint16_t>(b);
    }
  }
  scratch.bucket_count.assign(kNumBuckets, 0);
  scratch.bucket_mass.assign(kNumBuckets, 0.0);
  uint32_t* count = scratch.bucket_count.data();
  double* mass = scratch.bucket_mass.data();
  if (weight) {
    for (size_t i = 0; i < n; ++i) {
      ++count[bucket_of[i]];
      mass[bucket_of[i]] += static_cast<double>(weight[i]);
    }
  } else {
    for (size_t i = 0; i < n; ++i) ++count[bucket_of[i]];
  }
}

// kept[0, result) = positions in buckets before `crossing`, in position order (branch-free
// compaction); the crossing bucket's positions, sorted by rank, go to scratch.crossing.
size_t gather(const float* key, const int32_t* ids, size_t n, int crossing, std::vector<uint32_t>& kept,
              PrefixSelectionScratch& scratch) {
  size_t n_kept = 0;
  const uint16_t* bucket_of = scratch.bucket_of.data();
  uint32_t* out = kept.data();
  for (size_t i = 0; i < n; ++i) {
    out[n_kept] = static_cast<uint32_t>(i);
    n_kept += bucket_of[i] < crossing;
  }
  std::vector<uint32_t>& in_crossing = scratch.crossing;
  in_crossing.clear();
  for (size_t i = 0; i < n; ++i)
    if (bucket_of[i] == crossing) in_crossing.push_back(static_cast<uint32_t>(i));
  std::sort(in_crossing.begin(), in_crossing.end(), [&](uint32_t a, uint32_t b) {
    return key[a] < key[b] || (key[a] == key[b] && ids[a] < ids[b]);
  });
  return n_kept;
}

PrefixSelection keep_everything(size_t n, std::vector<uint32_t>& kept) {
  for (size_t i = 0; i < n; ++i) kept[i] = static_cast<uint32_t>(i);
  return {n, n <= 1};
}

}  // namespace

PrefixSelection select_mass_prefix(const float* key, const float* weight, const int32_t* ids, size_t n, double target,
                                   std::vector<uint32_t>& kept, PrefixSelectionScratch& scratch) {
  if (kept.size() < n) kept.resize(n);
  if (n == 0) return {0, true};
  histogram(key, weight, n, scratch);
  // The crossing bucket: the first non-empty one where the cumulative mass reaches the target.
  // (Empty buckets are skipped so that a target ≤ 0 still keeps the top entry.)
  double before = 0.0;  // mass of the buckets before the crossing one
  int crossing = -1;
  for (int b = 0; b < kNumBuckets; ++b) {
    if (scratch.bucket_count[static_cast<size_t>(b)] == 0) continue;
    if (before + scratch.bucket_mass[static_cast<size_t>(b)] >= target) {
      crossing = b;
      break;
    }
    before += scratch.bucket_mass[static_cast<size_t>(b)];
  }
  // The target exceeds the total (p ≈ 1 with rounding): everything is kept.
  if (crossing < 0) return keep_everything(n, kept);
  PrefixSelection result{gather(key, ids, n, crossing, kept, scratch), false};
  result.rank_order = result.n_kept == 0;
  double cumulative = before;
  for (uint32_t position : scratch.crossing) {
    kept[result.n_kept++] = position;
    cumulative += static_cast<double>(weight[position]);
    if (cumulative >= target) break;
  }
  return result;
}

PrefixSelection select_count_prefix(const float* key, const int32_t* ids, size_t n, size_t k,
                                    std::vector<uint32_t>& kept, PrefixSelectionScratch& scratch) {
  if (kept.size() < n) kept.resize(n);
  if (k >= n) return keep_everything(n, kept);
  if (k == 0) return {0, true};
  histogram(key, nullptr, n, scratch);
  size_t before = 0;  // entries in the buckets before the crossing one
  int crossing = 0;
  while (before + scratch.bucket_count[static_cast<size_t>(crossing)] < k)
    before += scratch.bucket_count[static_cast<size_t>(crossing++)];
  PrefixSelection result{gather(key, ids, n, crossing, kept, scratch), false};
  result.rank_order = result.n_kept == 0;
  for (size_t i = 0; i < k - before; ++i) kept[result.n_kept++] = scratch.crossing[i];
  return result;
}

}  // namespace nucleus
