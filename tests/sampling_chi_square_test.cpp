// Statistical tests of the sampler chain: for each stage and for whole chains, 100,000 draws (output
// positions 0..99,999 with one fixed seed, so the test is deterministic) from a fixed 7-token
// distribution are compared with the exact distribution the definitions in DESIGN.md give, computed
// here independently (doubles, full sorts). Pearson's chi-square test must give p > 1e-3 — and a
// deliberately wrong top-p (dropping the crossing token) must give p < 1e-3 on the same test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sampling/sampler.h"

namespace nucleus {
namespace {

constexpr int kNumDraws = 100000;
constexpr uint64_t kSeed = 20240611;

// ---- chi-square p-value: Q(df/2, x/2), the regularized upper incomplete gamma function ----

// P(a, x) by its power series (converges fast for x < a + 1).
double lower_gamma_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 1000 && std::fabs(term) > std::fabs(sum) * 1e-16; ++n) {
    term *= x / (a + n);
    sum += term;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) by its continued fraction (modified Lentz), for x ≥ a + 1.
double upper_gamma_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

double chi_square_p_value(double statistic, int degrees_of_freedom) {
  const double a = degrees_of_freedom / 2.0, x = statistic / 2.0;
  if (x <= 0.0) return 1.0;
  return x < a + 1.0 ? 1.0 - lower_gamma_series(a, x) : upper_gamma_fraction(a, x);
}

TEST(ChiSquarePValue, MatchesTabulatedQuantiles) {
  // Critical values from standard chi-square tables.
  EXPECT_NEAR(chi_square_p_value(3.841459, 1), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_p_value(10.827566, 1), 0.001, 1e-7);
  EXPECT_NEAR(chi_square_p_value(11.070498, 5), 0.05, 1e-6);
  EXPECT_NEAR(chi_square_p_value(20.515006, 5), 0.001, 1e-7);
  EXPECT_NEAR(chi_square_p_value(2.0, 2), std::exp(-1.0), 1e-12);  // df 2: Q = e^{-x/2}
  EXPECT_NEAR(chi_square_p_value(124.342, 100), 0.05, 1e-4);
}

// ---- the exact distributions, from the definitions ----

using Logits = std::vector<double>;  // [n_vocab]; −inf = removed

std::vector<double> softmax(const Logits& l) {
  const double max = *std::max_element(l.begin(), l.end());
  std::vector<double> p(l.size());
  double sum = 0.0;
  for (size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp(l[i] - max);
  for (double& x : p) x /= sum;
  return p;
}

// Ids by descending value, lower id first at equal values.
std::vector<size_t> ranked(const std::vector<double>& value) {
  std::vector<size_t> order(value.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] > value[b]; });
  return order;
}

void remove_after(Logits& l, const std::vector<size_t>& order, size_t keep) {
  for (size_t r = keep; r < order.size(); ++r) l[order[r]] = -INFINITY;
}

void reference_temperature(Logits& l, double t) {
  for (double& x : l) x /= t;
}
void reference_top_k(Logits& l, size_t k) { remove_after(l, ranked(l), k); }
void reference_top_p(Logits& l, double top_p) {
  const auto p = softmax(l);
  const auto order = ranked(l);
  double mass = 0.0;
  size_t keep = 0;
  while (keep < order.size() && mass < top_p) mass += p[order[keep++]];  // the crossing token is kept
  remove_after(l, order, std::max<size_t>(keep, 1));
}
void reference_min_p(Logits& l, double min_p) {
  const auto p = softmax(l);
  const double p_max = *std::max_element(p.begin(), p.end());
  for (size_t i = 0; i < l.size(); ++i)
    if (p[i] < min_p * p_max) l[i] = -INFINITY;
}
void reference_typical_p(Logits& l, double mass_target) {
  const auto p = softmax(l);
  double entropy = 0.0;
  for (double x : p)
    if (x > 0) entropy -= x * std::log(x);
  std::vector<double> closeness(l.size());  // negated |−log p − H|: ranked() sorts descending
  for (size_t i = 0; i < l.size(); ++i) closeness[i] = p[i] > 0 ? -std::fabs(-std::log(p[i]) - entropy) : -INFINITY;
  const auto order = ranked(closeness);
  double mass = 0.0;
  size_t keep = 0;
  while (keep < order.size() && mass < mass_target) mass += p[order[keep++]];
  remove_after(l, order, std::max<size_t>(keep, 1));
}
void reference_penalties(Logits& l, const std::vector<int32_t>& window, double repetition, double frequency,
                         double presence) {
  std::vector<int> count(l.size(), 0);
  for (int32_t t : window) ++count[static_cast<size_t>(t)];
  for (size_t i = 0; i < l.size(); ++i) {
    if (count[i] == 0) continue;
    l[i] = l[i] > 0 ? l[i] / repetition : l[i] * repetition;
    l[i] -= count[i] * frequency + presence;
  }
}

// ---- the test itself ----

// The fixed distribution: probabilities over 7 ids, deliberately not in id order, as logits with an
// offset (the chain never sees normalized values).
Logits base_logits() {
  const double probs[7] = {0.22, 0.12, 0.05, 0.30, 0.06, 0.16, 0.09};  // sorted: 3, 0, 5, 1, 6, 4, 2
  Logits l(7);
  for (size_t i = 0; i < 7; ++i) l[i] = std::log(probs[i]) + 1.7;
  return l;
}

std::vector<float> as_float(const Logits& l) { return {l.begin(), l.end()}; }

struct Counts {
  std::vector<int64_t> observed;
  std::vector<double> expected;  // probabilities
};

Counts draw(SamplerChain& chain, const Logits& logits, const std::vector<double>& expected,
            const std::vector<int32_t>& history = {}) {
  const std::vector<float> row = as_float(logits);
  Counts counts{std::vector<int64_t>(row.size(), 0), expected};
  for (int position = 0; position < kNumDraws; ++position) {
    const int32_t token = chain.sample(row.data(), static_cast<int64_t>(row.size()), SamplingContext{history, static_cast<uint64_t>(position)});
    ++counts.observed[static_cast<size_t>(token)];
  }
  return counts;
}

// p-value of Pearson's test; 0 when a token of expected probability 0 was drawn.
double p_value(const Counts& c) {
  double statistic = 0.0;
  int categories = 0;
  for (size_t i = 0; i < c.observed.size(); ++i) {
    const double expected = c.expected[i] * kNumDraws;
    if (c.expected[i] == 0.0) {
      if (c.observed[i] > 0) return 0.0;
      continue;
    }
    statistic += (c.observed[i] - expected) * (c.observed[i] - expected) / expected;
    ++categories;
  }
  return categories <= 1 ? 1.0 : chi_square_p_value(statistic, categories - 1);
}

std::string describe(const Counts& c) {
  std::string s;
  for (size_t i = 0; i < c.observed.size(); ++i)
    s += "  id " + std::to_string(i) + ": observed " + std::to_string(c.observed[i]) + ", expected " +
         std::to_string(c.expected[i] * kNumDraws) + "\n";
  return s;
}

SamplingParams params_with_seed() {
  SamplingParams p;
  p.seed = kSeed;
  return p;
}

void expect_matches(SamplingParams params, const Logits& reference, const std::vector<int32_t>& history = {}) {
  SamplerChain chain(params);
  const Counts counts = draw(chain, base_logits(), softmax(reference), history);
  const double p = p_value(counts);
  EXPECT_GT(p, 1e-3) << chain.describe() << "\n" << describe(counts);
}

TEST(SamplerChiSquare, PlainDraw) {
  expect_matches(params_with_seed(), base_logits());
}

TEST(SamplerChiSquare, Temperature) {
  for (double t : {0.5, 0.8, 1.6}) {
    SamplingParams p = params_with_seed();
    p.temperature = static_cast<float>(t);
    Logits l = base_logits();
    reference_temperature(l, t);
    expect_matches(p, l);
  }
}

TEST(SamplerChiSquare, TopK) {
  for (int k : {2, 3, 5}) {
    SamplingParams p = params_with_seed();
    p.top_k = k;
    Logits l = base_logits();
    reference_top_k(l, static_cast<size_t>(k));
    expect_matches(p, l);
  }
}

TEST(SamplerChiSquare, TopP) {
  // Cumulative sorted mass: .30 .52 .68 .80 .89 .95 1 — 0.5 crosses at the 2nd token, 0.75 at the 4th.
  for (double top_p : {0.25, 0.5, 0.75, 0.9}) {
    SamplingParams p = params_with_seed();
    p.top_p = static_cast<float>(top_p);
    Logits l = base_logits();
    reference_top_p(l, top_p);
    expect_matches(p, l);
  }
}

TEST(SamplerChiSquare, MinP) {
  for (double min_p : {0.1, 0.35, 0.6}) {
    SamplingParams p = params_with_seed();
    p.min_p = static_cast<float>(min_p);
    Logits l = base_logits();
    reference_min_p(l, min_p);
    expect_matches(p, l);
  }
}

TEST(SamplerChiSquare, TypicalP) {
  for (double typical : {0.3, 0.6, 0.9}) {
    SamplingParams p = params_with_seed();
    p.typical_p = static_cast<float>(typical);
    Logits l = base_logits();
    reference_typical_p(l, typical);
    expect_matches(p, l);
  }
}

TEST(SamplerChiSquare, PenaltiesAndLogitBias) {
  const std::vector<int32_t> history = {3, 3, 1, 5, 0, 3, 6, 2};  // the window (last 6): 1 5 0 3 6 2
  SamplingParams p = params_with_seed();
  p.repetition_penalty = 1.4f;
  p.frequency_penalty = 0.3f;
  p.presence_penalty = 0.2f;
  p.penalty_last_n = 6;
  p.logit_bias = {{2, 1.5f}, {4, -0.5f}};
  Logits l = base_logits();
  l[2] += 1.5;
  l[4] -= 0.5;
  reference_penalties(l, {1, 5, 0, 3, 6, 2}, 1.4, 0.3, 0.2);
  expect_matches(p, l, history);
}

TEST(SamplerChiSquare, DefaultOrderWholeChain) {
  SamplingParams p = params_with_seed();
  p.temperature = 0.8f;
  p.top_k = 5;
  p.top_p = 0.8f;
  p.min_p = 0.2f;
  p.repetition_penalty = 1.2f;
  const std::vector<int32_t> history = {0, 5};
  Logits l = base_logits();
  reference_penalties(l, history, 1.2, 0.0, 0.0);
  reference_temperature(l, 0.8);
  reference_top_k(l, 5);
  reference_top_p(l, 0.8);
  reference_min_p(l, 0.2);
  expect_matches(p, l, history);
}

TEST(SamplerChiSquare, LlamaCppOrderWholeChain) {
  // Temperature last: the truncations see the untempered distribution.
  SamplingParams p = params_with_seed();
  p.order = parse_sampler_order("penalties,top_k,typical_p,top_p,min_p,temperature");
  p.temperature = 1.7f;
  p.top_k = 6;
  p.typical_p = 0.95f;
  p.top_p = 0.85f;
  p.min_p = 0.15f;
  Logits l = base_logits();
  reference_top_k(l, 6);
  reference_typical_p(l, 0.95);
  reference_top_p(l, 0.85);
  reference_min_p(l, 0.15);
  reference_temperature(l, 1.7);
  expect_matches(p, l);
}

TEST(SamplerChiSquare, TemperatureFirstAndLastDiffer) {
  // The same stages in the two orders give different exact distributions — and each chain matches
  // only its own (so the order really is applied).
  SamplingParams first = params_with_seed(), last = params_with_seed();
  first.temperature = last.temperature = 2.5f;
  first.min_p = last.min_p = 0.32f;  // untempered threshold 0.096: drops ids 6, 4, 2; tempered: none
  last.order = parse_sampler_order("min_p,temperature");
  Logits tempered_first = base_logits(), tempered_last = base_logits();
  reference_temperature(tempered_first, 2.5);
  reference_min_p(tempered_first, 0.32);
  reference_min_p(tempered_last, 0.32);
  reference_temperature(tempered_last, 2.5);
  expect_matches(first, tempered_first);
  expect_matches(last, tempered_last);
  SamplerChain wrong(first);
  EXPECT_LT(p_value(draw(wrong, base_logits(), softmax(tempered_last))), 1e-3);
}

// A deliberately wrong top-p: it stops before the token that crosses p.
class TopPDroppingCrossingToken : public SamplerStage {
 public:
  explicit TopPDroppingCrossingToken(float p) : p_(p) {}
  const char* name() const override { return "wrong_top_p"; }
  void apply(Candidates& c, const SamplingContext&) const override {
    c.sort_descending();
    c.softmax();
    double mass = 0.0;
    size_t keep = 0;
    while (keep < c.size() && mass + c.probs[keep] < p_) mass += c.probs[keep++];
    c.truncate(std::max<size_t>(keep, 1));
  }

 private:
  float p_;
};

TEST(SamplerChiSquare, WrongTopPFailsTheSameTest) {
  for (float top_p : {0.5f, 0.75f}) {
    Logits reference = base_logits();
    reference_top_p(reference, top_p);
    const std::vector<double> expected = softmax(reference);

    std::vector<std::unique_ptr<SamplerStage>> right_stages;
    right_stages.push_back(make_top_p_stage(top_p));
    SamplerChain right(std::move(right_stages), kSeed);
    EXPECT_GT(p_value(draw(right, base_logits(), expected)), 1e-3);

    std::vector<std::unique_ptr<SamplerStage>> wrong_stages;
    wrong_stages.push_back(std::make_unique<TopPDroppingCrossingToken>(top_p));
    SamplerChain wrong(std::move(wrong_stages), kSeed);
    const Counts counts = draw(wrong, base_logits(), expected);
    EXPECT_LT(p_value(counts), 1e-3) << describe(counts);
  }
}

// The test's power: a distribution only 5% (relative) off on one token must already fail.
TEST(SamplerChiSquare, DetectsASmallBias) {
  Logits l = base_logits();
  std::vector<double> expected = softmax(l);
  expected[3] *= 1.05;
  const double total = std::accumulate(expected.begin(), expected.end(), 0.0);
  for (double& e : expected) e /= total;
  SamplerChain chain(params_with_seed());
  EXPECT_LT(p_value(draw(chain, base_logits(), expected)), 1e-3);
}

}  // namespace
}  // namespace nucleus
