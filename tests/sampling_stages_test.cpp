// Exact edge cases of the sampler stages and chain: greedy limits, no-op settings, tie rules,
// penalties against hand-computed logits, bans, the stage order, and the no-full-sort selections
// against full-sort references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"
#include "sampling/prefix_selection.h"
#include "sampling/row_math.h"
#include "sampling/sampler.h"

namespace nucleus {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> l(n);
  for (float& x : l) x = normal(rng);
  return l;
}

Candidates candidates_of(const std::vector<float>& logits) {
  Candidates c;
  c.assign(logits.data(), static_cast<int64_t>(logits.size()));
  return c;
}

std::vector<int32_t> sorted_ids(const Candidates& c) {
  std::vector<int32_t> ids = c.ids;
  std::sort(ids.begin(), ids.end());
  return ids;
}

SamplingParams seeded(uint64_t seed = 7) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

TEST(SamplerEdgeCases, TemperatureToZeroIsArgmax) {
  for (uint32_t row = 0; row < 20; ++row) {
    const auto logits = random_logits(1000, row);
    const int32_t best = argmax(logits.data(), 1000);
    std::vector<float> rest = logits;
    rest[static_cast<size_t>(best)] = -INFINITY;
    const float gap = logits[static_cast<size_t>(best)] - rest[static_cast<size_t>(argmax(rest.data(), 1000))];
    SamplingParams p = seeded(row);
    p.temperature = std::min(1e-3f, gap / 50.0f);  // the runner-up is ≥ 50 nats behind: never drawn
    SamplerChain cold(p);
    p.temperature = 0.0f;
    SamplerChain greedy(p);
    EXPECT_TRUE(greedy.greedy());
    for (uint64_t position = 0; position < 50; ++position) {
      EXPECT_EQ(cold.sample(logits.data(), 1000, position), best);
      EXPECT_EQ(greedy.sample(logits.data(), 1000, position), best);
    }
  }
}

TEST(SamplerEdgeCases, GreedyBreaksTiesTowardsTheLowerId) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 2.0f};
  SamplingParams p = seeded();
  p.temperature = 0.0f;
  EXPECT_EQ(SamplerChain(p).sample(logits.data(), 5, 0), 1);
  p.logit_bias = {{0, 0.0f}};  // forces the candidates path instead of the raw argmax
  EXPECT_EQ(SamplerChain(p).sample(logits.data(), 5, 0), 1);
}

TEST(SamplerEdgeCases, TopKOneIsGreedy) {
  for (uint32_t row = 0; row < 20; ++row) {
    const auto logits = random_logits(5000, 100 + row, 1.0f);
    SamplingParams p = seeded(row);
    p.top_k = 1;
    p.temperature = 1.5f;
    SamplerChain chain(p);
    for (uint64_t position = 0; position < 20; ++position)
      EXPECT_EQ(chain.sample(logits.data(), 5000, position), argmax(logits.data(), 5000));
  }
}

TEST(SamplerEdgeCases, TopPOneAndMinPZeroAreNoOps) {
  const auto logits = random_logits(300, 5);
  for (auto make : {+[] { return make_top_p_stage(1.0f); }, +[] { return make_min_p_stage(0.0f); },
                    +[] { return make_typical_p_stage(1.0f); }, +[] { return make_top_k_stage(0); },
                    +[] { return make_top_k_stage(-3); }}) {
    Candidates c = candidates_of(logits);
    make()->apply(c, {});
    EXPECT_EQ(c.ids, candidates_of(logits).ids);
    EXPECT_EQ(c.logits, logits);
  }
  // And through the chain: the same draws as the bare chain, position by position.
  SamplingParams off = seeded(3), bare = seeded(3);
  off.top_p = 1.0f;
  off.min_p = 0.0f;
  SamplerChain a(off), b(bare);
  EXPECT_EQ(a.describe(), "draw");
  for (uint64_t position = 0; position < 200; ++position)
    EXPECT_EQ(a.sample(logits.data(), 300, position), b.sample(logits.data(), 300, position));
}

TEST(SamplerEdgeCases, TinyTopPKeepsExactlyTheTopToken) {
  for (uint32_t row = 0; row < 10; ++row) {
    const auto logits = random_logits(2000, 200 + row, 0.5f);  // flat: the top token has little mass
    Candidates c = candidates_of(logits);
    make_top_p_stage(1e-6f)->apply(c, {});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c.ids[0], argmax(logits.data(), 2000));
    Candidates zero = candidates_of(logits);
    make_top_p_stage(0.0f)->apply(zero, {});
    ASSERT_EQ(zero.size(), 1u);
    EXPECT_EQ(zero.ids[0], argmax(logits.data(), 2000));
  }
}

TEST(SamplerEdgeCases, TopKTiesAtTheBoundaryKeepTheLowerIds) {
  // Sorted: 3.0 (ids 1, 3), then 2.0 (ids 2, 4, 5, 7), then the rest. k = 3 cuts inside the 2.0 tie.
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 2.0f, 2.0f, 0.0f, 2.0f};
  Candidates c = candidates_of(logits);
  make_top_k_stage(3)->apply(c, {});
  EXPECT_EQ(c.ids, (std::vector<int32_t>{1, 3, 2}));
  EXPECT_TRUE(c.sorted);
  Candidates five = candidates_of(logits);
  make_top_k_stage(5)->apply(five, {});
  EXPECT_EQ(five.ids, (std::vector<int32_t>{1, 3, 2, 4, 5}));
}

TEST(SamplerEdgeCases, TopPTiesAtTheCrossingKeepTheLowerIds) {
  // Four equal tokens of 0.25: p = 0.5 keeps exactly two, the lowest ids.
  const std::vector<float> logits = {0.0f, 0.0f, 0.0f, 0.0f};
  Candidates c = candidates_of({logits[0], logits[1], logits[2], logits[3]});
  make_top_p_stage(0.5f)->apply(c, {});
  EXPECT_EQ(sorted_ids(c), (std::vector<int32_t>{0, 1}));
  Candidates more = candidates_of(logits);
  make_top_p_stage(0.51f)->apply(more, {});
  EXPECT_EQ(sorted_ids(more), (std::vector<int32_t>{0, 1, 2}));
}

TEST(SamplerEdgeCases, MinPThresholdIsRelativeToTheTopToken) {
  // p ∝ (8, 4, 2, 1): the third token sits at 0.25 · p_max. (Exactly at the threshold the answer
  // depends on the last bit of the logits: min-p compares l_i − l_max ≥ log(min_p).)
  const std::vector<float> logits = {std::log(8.0f), std::log(4.0f), std::log(2.0f), std::log(1.0f)};
  Candidates below = candidates_of(logits);
  make_min_p_stage(0.2499f)->apply(below, {});
  EXPECT_EQ(sorted_ids(below), (std::vector<int32_t>{0, 1, 2}));
  Candidates above = candidates_of(logits);
  make_min_p_stage(0.2501f)->apply(above, {});
  EXPECT_EQ(sorted_ids(above), (std::vector<int32_t>{0, 1}));
  Candidates all = candidates_of(logits);
  make_min_p_stage(1.0f)->apply(all, {});
  EXPECT_EQ(sorted_ids(all), (std::vector<int32_t>{0}));  // min_p = 1 keeps only the top token(s)
}

TEST(SamplerEdgeCases, PenaltiesMatchHandComputedLogits) {
  //                              id: 0     1      2     3     4     5
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 1.0f};
  // Window (last 5 of the sequence): 3 3 1 4 3 → counts: 1 ×1, 3 ×3, 4 ×1. Token 0 and 5 are only
  // in the part of the sequence outside the window.
  const std::vector<int32_t> sequence = {0, 5, 3, 3, 1, 4, 3};
  PenaltyParams params;
  params.repetition_penalty = 2.0f;
  params.frequency_penalty = 0.25f;
  params.presence_penalty = 0.5f;
  params.last_n = 5;
  Candidates c = candidates_of(logits);
  make_penalties_stage(params)->apply(c, SamplingContext{sequence, 0});
  const std::vector<float> expected = {
      2.0f,                        // unseen in the window
      -1.0f * 2.0f - 0.25f - 0.5f, // negative: × 2, then − 1·0.25 − 0.5  = −2.75
      0.5f,                        // unseen
      3.0f / 2.0f - 0.75f - 0.5f,  // positive: / 2, then − 3·0.25 − 0.5 = 0.25
      -2.0f * 2.0f - 0.25f - 0.5f, // = −4.75
      1.0f,                        // outside the window
  };
  EXPECT_EQ(c.logits, expected);

  // last_n = -1: the whole sequence (token 0 ×1, 5 ×1 now count too).
  params.last_n = -1;
  Candidates all = candidates_of(logits);
  make_penalties_stage(params)->apply(all, SamplingContext{sequence, 0});
  EXPECT_FLOAT_EQ(all.logits[0], 2.0f / 2.0f - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(all.logits[5], 1.0f / 2.0f - 0.25f - 0.5f);
  // last_n = 0: off.
  params.last_n = 0;
  Candidates none = candidates_of(logits);
  make_penalties_stage(params)->apply(none, SamplingContext{sequence, 0});
  EXPECT_EQ(none.logits, logits);
}

TEST(SamplerEdgeCases, PenaltiesFindTokensInAReorderedCandidateSet) {
  // After top-k the candidates are no longer in id order: the penalty must still hit the right ids.
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 1.0f};
  Candidates c = candidates_of(logits);
  make_top_k_stage(4)->apply(c, {});  // ids 3, 0, 5, 2
  PenaltyParams params;
  params.presence_penalty = 10.0f;
  const std::vector<int32_t> sequence = {5, 1};
  make_penalties_stage(params)->apply(c, SamplingContext{sequence, 0});
  EXPECT_EQ(c.ids, (std::vector<int32_t>{3, 0, 5, 2}));
  EXPECT_EQ(c.logits, (std::vector<float>{3.0f, 2.0f, 1.0f - 10.0f, 0.5f}));
}

TEST(SamplerEdgeCases, LogitBiasOfMinusInfinityBansAToken) {
  const auto logits = random_logits(50, 9, 0.3f);
  const int32_t best = argmax(logits.data(), 50);
  SamplingParams p = seeded();
  p.logit_bias = {{best, -INFINITY}, {7, -INFINITY}};
  SamplerChain chain(p);
  for (uint64_t position = 0; position < 20000; ++position) {
    const int32_t token = chain.sample(logits.data(), 50, position);
    ASSERT_NE(token, best);
    ASSERT_NE(token, 7);
  }
  p.temperature = 0.0f;  // greedy honours the ban too: the runner-up wins
  std::vector<float> without = logits;
  without[static_cast<size_t>(best)] = without[7] = -INFINITY;
  EXPECT_EQ(SamplerChain(p).sample(logits.data(), 50, 0), argmax(without.data(), 50));
}

TEST(SamplerEdgeCases, EverythingBannedStillReturnsAToken) {
  const std::vector<float> logits = {1.0f, 2.0f};
  SamplingParams p = seeded();
  p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}};
  p.top_p = 0.5f;
  p.min_p = 0.5f;
  const int32_t token = SamplerChain(p).sample(logits.data(), 2, 0);
  EXPECT_TRUE(token == 0 || token == 1);
}

TEST(SamplerEdgeCases, MinTokensBansEndOfGeneration) {
  const std::vector<float> logits = {0.0f, 0.0f, 9.0f, 0.0f};  // id 2 (the "EOS") dominates
  SamplingParams p = seeded();
  p.temperature = 0.0f;
  p.min_tokens = 3;
  p.end_of_generation_ids = {2};
  SamplerChain chain(p);
  for (uint64_t position = 0; position < 3; ++position) EXPECT_NE(chain.sample(logits.data(), 4, position), 2);
  EXPECT_EQ(chain.sample(logits.data(), 4, 3), 2);
}

TEST(SamplerEdgeCases, DrawsDependOnlyOnSeedAndPosition) {
  const auto logits = random_logits(500, 11, 1.0f);
  SamplingParams p = seeded(99);
  p.top_p = 0.9f;
  SamplerChain a(p), b(p);
  std::vector<int32_t> forward, backward(100);
  for (uint64_t position = 0; position < 100; ++position) forward.push_back(a.sample(logits.data(), 500, position));
  for (uint64_t position = 100; position-- > 0;) backward[position] = b.sample(logits.data(), 500, position);
  EXPECT_EQ(forward, backward);  // replaying a position replays its draw, in any order
  SamplingParams other = seeded(100);
  other.top_p = 0.9f;
  SamplerChain c(other);
  int same = 0;
  for (uint64_t position = 0; position < 100; ++position) same += c.sample(logits.data(), 500, position) == forward[position];
  EXPECT_LT(same, 60);
}

TEST(SamplerEdgeCases, SampleSeedKeepsSampleZeroAndSeparatesTheOthers) {
  EXPECT_EQ(sample_seed(42, 0), 42u);
  EXPECT_NE(sample_seed(42, 1), sample_seed(42, 2));
  EXPECT_NE(sample_seed(42, 1), sample_seed(43, 1));
  EXPECT_NE(sample_seed(42, 1), 43u);
}

TEST(SamplerOrder, ParsesFormatsAndRejects) {
  EXPECT_EQ(format_sampler_order(default_sampler_order()), "logit_bias,penalties,temperature,top_k,top_p,min_p,typical_p");
  EXPECT_EQ(format_sampler_order(parse_sampler_order("penalties, top-k,typical,top_p,min_p,temp")),
            "penalties,top_k,typical_p,top_p,min_p,temperature");
  EXPECT_THROW(parse_sampler_order("top_k,nucleus"), Error);
  EXPECT_THROW(parse_sampler_order("top_k,top_k"), Error);
  SamplingParams p = seeded();
  p.temperature = 0.7f;
  p.top_k = 10;
  p.top_p = 0.9f;
  EXPECT_EQ(SamplerChain(p).describe(), "temperature → top_k → top_p → draw");
  p.order = parse_sampler_order("top_p,temperature");  // top_k left out: it never runs
  EXPECT_EQ(SamplerChain(p).describe(), "top_p → temperature → draw");
  p.temperature = 0.0f;
  p.repetition_penalty = 1.1f;
  p.order = default_sampler_order();
  EXPECT_EQ(SamplerChain(p).describe(), "penalties → argmax");
}

TEST(SamplerParams, InvalidValuesAreErrors) {
  auto invalid = [](auto edit) {
    SamplingParams p;
    edit(p);
    EXPECT_THROW(SamplerChain{p}, Error);
  };
  invalid([](SamplingParams& p) { p.temperature = -1.0f; });
  invalid([](SamplingParams& p) { p.top_p = 1.5f; });
  invalid([](SamplingParams& p) { p.min_p = -0.1f; });
  invalid([](SamplingParams& p) { p.repetition_penalty = 0.0f; });
  invalid([](SamplingParams& p) { p.penalty_last_n = -2; });
  invalid([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; });
  invalid([](SamplingParams& p) { p.temperature = NAN; });
}

// ---- the selections that avoid a full sort, against full-sort references ----

// The smallest prefix of the (key asc, id asc) ranking whose weight reaches target.
std::vector<uint32_t> reference_prefix(const std::vector<float>& key, const std::vector<float>& weight, double target) {
  std::vector<uint32_t> order(key.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key[a] < key[b] || (key[a] == key[b] && a < b); });
  double mass = 0.0;
  size_t keep = 0;
  while (keep < order.size() && (keep == 0 || mass < target)) mass += weight[order[keep++]];
  order.resize(keep);
  std::sort(order.begin(), order.end());
  return order;
}

TEST(PrefixSelection, EqualsTheFullSortReference) {
  std::mt19937 rng(1);
  PrefixSelectionScratch scratch;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % (trial < 200 ? 300 : 20000);
    std::vector<float> key(n), weight(n);
    std::vector<int32_t> ids(n);
    std::iota(ids.begin(), ids.end(), 0);
    const int kind = trial % 4;
    for (size_t i = 0; i < n; ++i) {
      key[i] = kind == 0 ? std::normal_distribution<float>(0, 3)(rng)
             : kind == 1 ? static_cast<float>(rng() % 5)              // heavy ties
             : kind == 2 ? (rng() % 10 == 0 ? INFINITY : std::normal_distribution<float>(0, 1)(rng))  // banned entries
                         : 1.0f;                                         // all equal
      weight[i] = std::isinf(key[i]) ? 0.0f : std::exp(-key[i]);
    }
    double total = 0.0;
    for (float w : weight) total += w;
    for (double p : {0.0, 1e-6, 0.3, 0.9, 0.999, 1.0}) {
      std::vector<uint32_t> kept;
      const PrefixSelection selection = select_mass_prefix(key.data(), weight.data(), ids.data(), n, p * total, kept, scratch);
      std::vector<uint32_t> got(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(selection.n_kept));
      std::sort(got.begin(), got.end());
      const std::vector<uint32_t> want = reference_prefix(key, weight, p * total);
      if (p < 1.0) {
        ASSERT_EQ(got, want) << "trial " << trial << " n " << n << " p " << p;
      } else {
        // p = 1: the reference and the bucket sums may disagree in the last bit about whether the
        // weightless tail is needed; the kept set must hold the whole positive mass.
        double mass = 0.0;
        for (uint32_t i : got) mass += weight[i];
        ASSERT_NEAR(mass, total, 1e-9 * total);
      }
    }
  }
}

TEST(PrefixSelection, TopPOnAFullVocabularyEqualsSortingFirst) {
  for (uint32_t row = 0; row < 8; ++row) {
    const auto logits = random_logits(128256, 300 + row, row % 2 ? 1.0f : 4.0f);
    for (float p : {0.5f, 0.9f, 0.95f}) {
      Candidates fast = candidates_of(logits);
      make_top_p_stage(p)->apply(fast, {});
      Candidates sorted = candidates_of(logits);
      sorted.sort_descending();
      make_top_p_stage(p)->apply(sorted, {});
      ASSERT_EQ(sorted_ids(fast), sorted_ids(sorted)) << "row " << row << " p " << p;
    }
  }
}

TEST(CandidatesPartialSort, EqualsTheFullSortPrefix) {
  const auto logits = random_logits(10000, 3, 1.0f);
  std::vector<float> with_ties = logits;
  for (float& x : with_ties) x = std::round(x * 4.0f) / 4.0f;
  for (const auto& row : {logits, with_ties}) {
    Candidates full = candidates_of(row);
    full.sort_descending();
    for (size_t k : {1u, 7u, 100u, 9999u}) {
      Candidates part = candidates_of(row);
      part.partial_sort_descending(k);
      ASSERT_EQ(part.ids, std::vector<int32_t>(full.ids.begin(), full.ids.begin() + static_cast<std::ptrdiff_t>(k)));
    }
  }
}

// ---- row arithmetic, against scalar references ----

TEST(RowMath, ExpMatchesStdExpOnItsDomain) {
  double worst = 0.0;
  for (int i = 0; i <= 2000000; ++i) {
    const float x = -87.0f * static_cast<float>(i) / 2000000.0f;
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(exp_nonpositive(x) - want) / want);
  }
  EXPECT_LT(worst, 2e-7);
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-88.0f), 0.0f);
  EXPECT_EQ(exp_nonpositive(-INFINITY), 0.0f);
  EXPECT_EQ(exp_nonpositive(NAN), 0.0f);
}

TEST(RowMath, SumsMaximaAndInverseCdfEqualTheirScalarDefinitions) {
  std::mt19937 rng(5);
  for (size_t n : {0u, 1u, 15u, 16u, 17u, 100u, 1000u}) {
    // Small integers: every partial sum is exact, so any summation order must agree exactly.
    std::vector<float> x(n);
    for (float& v : x) v = static_cast<float>(rng() % 5);
    double total = 0.0;
    for (float v : x) total += v;
    EXPECT_EQ(blocked_sum(x.data(), n), total);
    float max = -INFINITY;
    for (float v : x) max = std::max(max, v);
    EXPECT_EQ(max_value(x.data(), n), max);
    for (double threshold = 0.0; threshold < total; threshold += 0.5) {
      size_t want = 0;
      double cumulative = x.empty() ? 0.0 : x[0];
      while (!(threshold < cumulative)) cumulative += x[++want];
      ASSERT_EQ(inverse_cdf(x.data(), n, threshold), want) << n << " " << threshold;
    }
    EXPECT_EQ(inverse_cdf(x.data(), n, total), n);
  }
  const std::vector<float> odd = {NAN, -INFINITY, 3.0f, INFINITY, -2.0f};
  float low, high;
  finite_range(odd.data(), odd.size(), low, high);
  EXPECT_EQ(low, -2.0f);
  EXPECT_EQ(high, 3.0f);
  EXPECT_EQ(max_value(odd.data(), odd.size()), INFINITY);
}

}  // namespace
}  // namespace nucleus
