// The candidates array every sampling stage works on (structure of arrays).
// Invariant: ids/logits/probs have equal length; when `sorted` is true the entries are in
// descending logit order; probs are valid only after a stage that sets `has_probs`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nucleus {

struct Candidates {
  std::vector<int32_t> ids;
  std::vector<float> logits;
  std::vector<float> probs;
  bool sorted = false;
  bool has_probs = false;

  size_t size() const { return ids.size(); }
  // Fills with every token of a logits row, in id order.
  void assign(const float* row, int64_t n_vocab);
  void truncate(size_t n);
  void sort_descending();          // by logit; stable for equal logits (lower id first)
  void partial_sort_descending(size_t k);  // first k entries sorted, the rest dropped
  void softmax();                  // probs = softmax(logits), sets has_probs
};

}  // namespace nucleus
