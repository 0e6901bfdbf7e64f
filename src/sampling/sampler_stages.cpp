// The reshaping stages. Rules (../shared/DESIGN.md): top-k ≤ 0 is off; top-p keeps the
// smallest prefix, by descending probability, whose mass reaches p (the crossing token is
// kept); min-p keeps p_i ≥ min_p · p_max; at least one token always survives.
#include <algorithm>
#include <cmath>

#include "sampling/sampler.h"

namespace nucleus {

namespace {

class TemperatureStage : public SamplerStage {
 public:
  explicit TemperatureStage(float t) : inverse_(1.0f / t) {}
  const char* name() const override { return "temperature"; }
  void apply(Candidates& c) const override {
    for (float& l : c.logits) l *= inverse_;
    c.has_probs = false;
  }

 private:
  float inverse_;
};

class TopKStage : public SamplerStage {
 public:
  explicit TopKStage(int32_t k) : k_(k) {}
  const char* name() const override { return "top-k"; }
  void apply(Candidates& c) const override {
    if (k_ <= 0 || static_cast<size_t>(k_) >= c.size()) return;
    c.partial_sort_descending(static_cast<size_t>(k_));
  }

 private:
  int32_t k_;
};

class TopPStage : public SamplerStage {
 public:
  explicit TopPStage(float p) : p_(p) {}
  const char* name() const override { return "top-p"; }
  void apply(Candidates& c) const override {
    if (p_ >= 1.0f || c.size() <= 1) return;
    c.sort_descending();
    c.softmax();
    double mass = 0.0;
    size_t keep = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
      mass += c.probs[i];
      if (mass >= p_) {
        keep = i + 1;
        break;
      }
    }
    c.truncate(std::max<size_t>(1, keep));
  }

 private:
  float p_;
};

class MinPStage : public SamplerStage {
 public:
  explicit MinPStage(float min_p) : min_p_(min_p) {}
  const char* name() const override { return "min-p"; }
  void apply(Candidates& c) const override {
    if (min_p_ <= 0.0f || c.size() <= 1) return;
    c.sort_descending();
    c.softmax();
    const float threshold = min_p_ * c.probs[0];
    size_t keep = 1;
    while (keep < c.size() && c.probs[keep] >= threshold) ++keep;
    c.truncate(keep);
  }

 private:
  float min_p_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_temperature_stage(float t) { return std::make_unique<TemperatureStage>(t); }
std::unique_ptr<SamplerStage> make_top_k_stage(int32_t k) { return std::make_unique<TopKStage>(k); }
std::unique_ptr<SamplerStage> make_top_p_stage(float p) { return std::make_unique<TopPStage>(p); }
std::unique_ptr<SamplerStage> make_min_p_stage(float min_p) { return std::make_unique<MinPStage>(min_p); }

}  // namespace nucleus
