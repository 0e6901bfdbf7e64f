// The candidates array every sampling stage works on (structure of arrays).
//
// Invariants:
//   - ids, logits (and probs when has_probs) have equal length; ids are distinct.
//   - sorted == true: entries are in descending logit order, equal logits by ascending id (the one
//     tie rule of every stage: at equal logits the lower id ranks first).
//   - has_probs == true: probs[i] is proportional to exp(logits[i]) with one common factor, so a
//     truncation may keep them without renormalizing; softmax() makes them sum to 1. Any stage that
//     edits logits clears has_probs.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/prefix_selection.h"

namespace nucleus {

struct Candidates {
  std::vector<int32_t> ids;    // [n] token ids
  std::vector<float> logits;   // [n]
  std::vector<float> probs;    // [n] when has_probs
  bool sorted = false;
  bool has_probs = false;

  size_t size() const { return ids.size(); }
  // Fills with every token of a logits row [n_vocab], in id order.
  void assign(const float* row, int64_t n_vocab);
  void truncate(size_t n);  // keeps the first n entries
  // Keeps the entries at `positions` (distinct, into the current arrays), in that order.
  // `result_sorted` states whether that order is the sorted order.
  void keep(std::span<const uint32_t> positions, bool result_sorted);
  // Keeps the entries whose flag is set, in their current order (sortedness is preserved).
  void keep_where(const std::vector<uint8_t>& flags);

  void sort_descending();                  // full sort (no-op when already sorted)
  // The k best entries, sorted; the rest dropped. O(n + k log k) by bucket selection (prefix_selection.h).
  void partial_sort_descending(size_t k);
  float max_logit() const;                 // −inf when empty
  void softmax();                          // probs = softmax(logits), sums to 1; sets has_probs
  // probs = exp(logits − max) without normalizing (the cheap form of the invariant); sets has_probs.
  // Returns their sum. Every logit −inf (all banned) gives uniform probs, so a draw still succeeds.
  double exp_probs();
  // Σ probs, computing them first (exp_probs) when they are not valid.
  double probability_mass();

  // Calls visit(position, j) for each j where sorted_ids[j] (ascending, distinct) is a candidate.
  // O(sorted_ids) while the array is still in id order from assign(), else one pass with lookups.
  template <class Visit>
  void visit_ids(std::span<const int32_t> sorted_ids, Visit visit) const;

  // Reused buffers so that per-token calls do not allocate; no meaning between calls.
  struct Scratch {
    std::vector<uint32_t> order;
    std::vector<int32_t> ids, tokens, counts;
    std::vector<float> logits, probs, keys, values;
    std::vector<uint8_t> flags;
    PrefixSelectionScratch selection;
  } scratch;
};

template <class Visit>
void Candidates::visit_ids(std::span<const int32_t> sorted_ids, Visit visit) const {
  bool direct = true;
  for (int32_t id : sorted_ids)
    if (id < 0 || static_cast<size_t>(id) >= size() || ids[static_cast<size_t>(id)] != id) direct = false;
  if (direct) {
    for (size_t j = 0; j < sorted_ids.size(); ++j) visit(static_cast<size_t>(sorted_ids[j]), j);
    return;
  }
  for (size_t i = 0; i < size(); ++i) {
    const auto* found = std::lower_bound(sorted_ids.data(), sorted_ids.data() + sorted_ids.size(), ids[i]);
    if (found != sorted_ids.data() + sorted_ids.size() && *found == ids[i])
      visit(i, static_cast<size_t>(found - sorted_ids.data()));
  }
}

}  // namespace nucleus
