// The selections behind top-k, top-p and typical-p: rank entries by a key and keep a prefix of that
// ranking — without sorting the whole vocabulary.
//
// Ranking: ascending key, equal keys by ascending id (the stages pass −logit as the key for
// "descending probability, lower id first"). Prefixes:
//   select_count_prefix  the first k entries
//   select_mass_prefix   the smallest prefix whose weight reaches `target`: the entry whose weight
//                        makes the running sum reach the target is kept; at least one entry is kept
//
// Algorithm (O(n) plus a sort of one bucket): the key range is cut into kNumBuckets equal-width
// buckets and a histogram of counts and weights is taken. Equal keys fall into the same bucket and
// a larger key never falls into an earlier bucket, so every bucket before the one where the
// cumulative count / weight reaches its target is kept whole, unsorted, and only that crossing
// bucket is sorted. Weight sums are in double; they may differ from a sorted left-to-right sum in
// the last bits, which matters only when a prefix's mass equals the target to ~1e-15.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nucleus {

struct PrefixSelectionScratch {
  std::vector<uint16_t> bucket_of;     // [n] bucket of each entry
  std::vector<double> bucket_mass;     // [kNumBuckets]
  std::vector<uint32_t> bucket_count;  // [kNumBuckets]
  std::vector<uint32_t> crossing;      // positions in the crossing bucket
};

struct PrefixSelection {
  size_t n_kept = 0;        // kept positions are kept[0, n_kept)
  bool rank_order = false;  // they are in rank order (no whole bucket was kept)
};

// key, weight, ids: [n]. weight ≥ 0 (0 for banned entries, whose key may be +inf). Writes the kept
// positions to kept[0, n_kept) — the whole buckets in position order, then the crossing bucket's
// entries in rank order. `kept` is grown to n when smaller and never shrunk, so that a per-token call
// neither allocates nor fills.
PrefixSelection select_mass_prefix(const float* key, const float* weight, const int32_t* ids, size_t n, double target,
                                   std::vector<uint32_t>& kept, PrefixSelectionScratch& scratch);

// The same for the first k entries (k ≥ n keeps everything).
PrefixSelection select_count_prefix(const float* key, const int32_t* ids, size_t n, size_t k,
                                    std::vector<uint32_t>& kept, PrefixSelectionScratch& scratch);

}  // namespace nucleus
