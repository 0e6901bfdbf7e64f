// The reshaping stages: temperature and the truncations. Rules (../shared/DESIGN.md): top-k ≤ 0 is
// off; top-p keeps the smallest prefix, by descending probability, whose mass reaches p (the crossing
// token is kept); min-p keeps p_i ≥ min_p · p_max; at least one token always survives.
#include <cmath>
#include <numeric>

#include "sampling/prefix_selection.h"
#include "sampling/row_math.h"
#include "sampling/sampler.h"

namespace nucleus {

namespace {

class TemperatureStage : public SamplerStage {
 public:
  explicit TemperatureStage(float temperature) : inverse_(1.0f / temperature) {}
  const char* name() const override { return "temperature"; }
  void apply(Candidates& c, const SamplingContext&) const override {
    for (float& l : c.logits) l *= inverse_;  // a positive scale keeps the order, and ties
    c.has_probs = false;
  }

 private:
  float inverse_;
};

class TopKStage : public SamplerStage {
 public:
  explicit TopKStage(int32_t k) : k_(k) {}
  const char* name() const override { return "top_k"; }
  void apply(Candidates& c, const SamplingContext&) const override {
    if (k_ <= 0 || static_cast<size_t>(k_) >= c.size()) return;
    c.partial_sort_descending(static_cast<size_t>(k_));  // bucket selection, then sort k: O(n + k log k)
  }

 private:
  int32_t k_;
};

class TopPStage : public SamplerStage {
 public:
  explicit TopPStage(float p) : p_(p) {}
  const char* name() const override { return "top_p"; }
  void apply(Candidates& c, const SamplingContext&) const override {
    if (p_ >= 1.0f || c.size() <= 1) return;
    const double target = static_cast<double>(p_) * c.probability_mass();
    if (c.sorted) {  // already ranked (e.g. after top-k): a linear scan finds the crossing token
      double mass = 0.0;
      size_t keep = c.size();
      for (size_t i = 0; i < c.size(); ++i) {
        mass += c.probs[i];
        if (mass >= target) {
          keep = i + 1;
          break;
        }
      }
      c.truncate(keep);
      return;
    }
    // Unsorted (a full vocabulary): rank by −logit with the bucket selection, no full sort.
    std::vector<float>& key = c.scratch.keys;
    key.resize(c.size());
    for (size_t i = 0; i < c.size(); ++i) key[i] = -c.logits[i];
    const PrefixSelection selection = select_mass_prefix(key.data(), c.probs.data(), c.ids.data(), c.size(), target,
                                                         c.scratch.order, c.scratch.selection);
    c.keep({c.scratch.order.data(), selection.n_kept}, selection.rank_order);
  }

 private:
  float p_;
};

class MinPStage : public SamplerStage {
 public:
  explicit MinPStage(float min_p) : log_min_p_(std::log(min_p)), min_p_(min_p) {}
  const char* name() const override { return "min_p"; }
  void apply(Candidates& c, const SamplingContext&) const override {
    if (min_p_ <= 0.0f || c.size() <= 1) return;
    // p_i ≥ min_p · p_max  ⇔  l_i − l_max ≥ log(min_p): one pass, no softmax, no sort (in float:
    // exactly at the threshold the last bit of the logits decides).
    const float max = c.max_logit();
    if (max == -INFINITY) return;  // everything banned: nothing to compare against
    std::vector<uint8_t>& flags = c.scratch.flags;
    flags.resize(c.size());
    const float* logits = c.logits.data();
    for (size_t i = 0; i < c.size(); ++i) flags[i] = logits[i] - max >= log_min_p_;
    c.keep_where(flags);  // the max always passes (0 ≥ log(min_p) for min_p ≤ 1)
  }

 private:
  float log_min_p_;
  float min_p_;
};

class TypicalPStage : public SamplerStage {
 public:
  explicit TypicalPStage(float typical_p) : typical_p_(typical_p) {}
  const char* name() const override { return "typical_p"; }
  void apply(Candidates& c, const SamplingContext&) const override {
    if (typical_p_ >= 1.0f || c.size() <= 1) return;
    // log p_i = l_i − max − log Σ exp(l − max), from the logits (no per-token log);
    // H = −Σ p_i log p_i; rank by |−log p_i − H| ascending.
    const float max = c.max_logit();
    if (max == -INFINITY) return;  // everything banned
    c.probs.resize(c.size());
    const double total = exp_shifted(c.logits.data(), max, c.probs.data(), c.size());
    c.has_probs = true;
    const double log_total = std::log(total);
    std::vector<float>& key = c.scratch.keys;
    key.resize(c.size());
    for (size_t i = 0; i < c.size(); ++i) key[i] = static_cast<float>(c.logits[i] - max - log_total);  // log p_i
    std::vector<float>& weighted = c.scratch.values;  // p_i · log p_i, unnormalized
    weighted.resize(c.size());
    for (size_t i = 0; i < c.size(); ++i) weighted[i] = c.probs[i] > 0.0f ? c.probs[i] * key[i] : 0.0f;
    const double entropy = -blocked_sum(weighted.data(), c.size()) / total;
    for (size_t i = 0; i < c.size(); ++i)
      key[i] = c.probs[i] > 0.0f ? std::fabs(-key[i] - static_cast<float>(entropy)) : INFINITY;
    const PrefixSelection selection =
        select_mass_prefix(key.data(), c.probs.data(), c.ids.data(), c.size(), static_cast<double>(typical_p_) * total,
                           c.scratch.order, c.scratch.selection);
    c.keep({c.scratch.order.data(), selection.n_kept}, /*result_sorted=*/false);  // typical order is not logit order
  }

 private:
  float typical_p_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_temperature_stage(float t) { return std::make_unique<TemperatureStage>(t); }
std::unique_ptr<SamplerStage> make_top_k_stage(int32_t k) { return std::make_unique<TopKStage>(k); }
std::unique_ptr<SamplerStage> make_top_p_stage(float p) { return std::make_unique<TopPStage>(p); }
std::unique_ptr<SamplerStage> make_min_p_stage(float min_p) { return std::make_unique<MinPStage>(min_p); }
std::unique_ptr<SamplerStage> make_typical_p_stage(float p) { return std::make_unique<TypicalPStage>(p); }

}  // namespace nucleus
