// Speculative sampling must leave the target's distribution untouched: on tiny random models
// (vocabulary 32) the joint law of the next 3 tokens is enumerated exactly from the target and
// compared, by a chi-square test over 200k speculative samples, with what the generator emits —
// for several temperatures, top-p, penalties, good and bad drafts, n-gram and self-speculation.
// A deliberately broken verifier must fail the same test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "core/rng.h"
#include "sampling/sampler.h"
#include "speculative/draft_model_proposer.h"
#include "speculative/ngram_proposer.h"
#include "speculative/self_speculation.h"
#include "speculative/speculative_generator.h"
#include "speculative_tiny_model.h"

namespace nucleus {
namespace {

constexpr int64_t kVocab = 32;
constexpr int64_t kNewTokens = 3;
#ifdef NUCLEUS_SANITIZED
constexpr int64_t kDefaultSamples = 20000;  // sanitizer build: memory errors, not statistical power
#else
constexpr int64_t kDefaultSamples = 200000;
#endif
const int64_t kSamples = std::getenv("SPEC_SAMPLES") ? std::atoll(std::getenv("SPEC_SAMPLES")) : kDefaultSamples;
constexpr int64_t kCells = kVocab * kVocab * kVocab;

std::vector<float> dense(const Candidates& c) {
  std::vector<float> row(static_cast<size_t>(kVocab), 0.0f);
  for (size_t j = 0; j < c.size(); ++j) row[static_cast<size_t>(c.ids[j])] = c.probs[j];
  return row;
}

// P(x1, x2, x3 | prompt) under plain sampling from the target with `params`, by enumeration.
std::vector<double> exact_joint(Model& target, const SamplingParams& params, const std::vector<int32_t>& prompt) {
  SequenceRunner runner(target, 64, 1);
  SamplerChain chain(params);
  const auto n = static_cast<int64_t>(prompt.size());
  std::vector<int32_t> sequence = prompt;
  auto distribution_after = [&](const std::vector<float>& logits, uint64_t position) {
    return dense(chain.distribution(logits.data(), kVocab, SamplingContext{sequence, position}));
  };
  std::vector<double> joint(static_cast<size_t>(kCells), 0.0);
  const std::vector<float> p1 = distribution_after(runner.feed(prompt), 0);
  for (int32_t x1 = 0; x1 < kVocab; ++x1) {
    if (p1[x1] == 0.0f) continue;
    runner.truncate(n);
    sequence.resize(static_cast<size_t>(n));
    sequence.push_back(x1);
    const std::vector<float> p2 = distribution_after(runner.feed(std::vector<int32_t>{x1}), 1);
    for (int32_t x2 = 0; x2 < kVocab; ++x2) {
      if (p2[x2] == 0.0f) continue;
      runner.truncate(n + 1);
      sequence.resize(static_cast<size_t>(n + 1));
      sequence.push_back(x2);
      const std::vector<float> p3 = distribution_after(runner.feed(std::vector<int32_t>{x2}), 2);
      for (int32_t x3 = 0; x3 < kVocab; ++x3)
        joint[static_cast<size_t>((x1 * kVocab + x2) * kVocab + x3)] =
            static_cast<double>(p1[x1]) * p2[x2] * static_cast<double>(p3[x3]);
    }
  }
  return joint;
}

struct Sampled {
  std::vector<int64_t> counts;  // [kCells]
  SpeculativeStats stats;
};

Sampled sample_speculative(Model& target, Proposer& proposer, const SamplingParams& params, int32_t gamma,
                           const std::vector<int32_t>& prompt, std::optional<SampledVerifier> verifier = std::nullopt) {
  SpeculativeGenerator generator(target, proposer, params, gamma, 64, 1);
  if (verifier) generator.set_verifier(*verifier);
  Sampled sampled;
  sampled.counts.assign(static_cast<size_t>(kCells), 0);
  const size_t n = prompt.size();
  for (int64_t s = 0; s < kSamples; ++s) {
    generator.start(prompt, kNewTokens, splitmix64(static_cast<uint64_t>(s) + 12345));
    while (!generator.finished()) generator.step();
    const std::vector<int32_t>& t = generator.tokens();
    ++sampled.counts[static_cast<size_t>((t[n] * kVocab + t[n + 1]) * kVocab + t[n + 2])];
    sampled.stats.add(generator.stats());
  }
  return sampled;
}

// Upper tail of chi-square with `df` degrees of freedom (Wilson–Hilferty; df here is in the hundreds).
double chi_square_upper_tail(double x, double df) {
  const double z = (std::cbrt(x / df) - (1.0 - 2.0 / (9.0 * df))) / std::sqrt(2.0 / (9.0 * df));
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

// Pearson's test of counts against probabilities; cells expecting fewer than 5 are pooled. A sample
// in a cell of probability exactly 0 gives p = 0.
double chi_square_p_value(const std::vector<int64_t>& counts, const std::vector<double>& probs) {
  double statistic = 0.0, pooled_expected = 0.0;
  int64_t pooled_observed = 0, bins = 0;
  for (size_t c = 0; c < counts.size(); ++c) {
    const double expected = probs[c] * static_cast<double>(kSamples);
    if (probs[c] == 0.0 && counts[c] > 0) return 0.0;
    if (expected < 5.0) {
      pooled_expected += expected;
      pooled_observed += counts[c];
      continue;
    }
    const double d = static_cast<double>(counts[c]) - expected;
    statistic += d * d / expected;
    ++bins;
  }
  if (pooled_expected > 0.0) {
    const double d = static_cast<double>(pooled_observed) - pooled_expected;
    statistic += d * d / pooled_expected;
    ++bins;
  }
  return chi_square_upper_tail(statistic, static_cast<double>(bins - 1));
}

// A wrong rule: on rejection draw from p instead of norm(max(0, p − q)).
VerificationResult verify_without_residual(std::span<const int32_t> draft_tokens, const float* target_probs,
                                           const float* draft_probs, int64_t n_vocab, uint64_t seed,
                                           uint64_t first_position) {
  VerificationResult result = verify_sampled(draft_tokens, target_probs, draft_probs, n_vocab, seed, first_position);
  if (result.num_accepted < static_cast<int32_t>(draft_tokens.size())) {
    const uint64_t position = first_position + static_cast<uint64_t>(result.num_accepted);
    result.token = draw_from_weights(target_probs + static_cast<int64_t>(result.num_accepted) * n_vocab, n_vocab,
                                     uniform_at(seed, position, kTargetStream));
  }
  return result;
}

enum class Draft { good, bad, ngram, self_prefix };

struct Case {
  const char* name;
  Draft draft;
  float temperature;
  float top_p;
  float repetition_penalty;
  int32_t gamma;
};

class SpeculativeDistributionTest : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    target_ = test::make_tiny_model(test::TinyModelSpec{}).release();
    test::TinyModelSpec good;
    good.noise = 0.1f;
    good.noise_seed = 7;
    good_draft_ = test::make_tiny_model(good).release();
    test::TinyModelSpec bad;
    bad.seed = 99;
    bad.output_scale = 5.0f;  // confident and unrelated: q puts its mass where p has little
    bad_draft_ = test::make_tiny_model(bad).release();
  }
  static void TearDownTestSuite() {
    delete target_;
    delete good_draft_;
    delete bad_draft_;
  }

  static std::unique_ptr<Proposer> make_proposer(Draft draft, const SamplingParams& params) {
    switch (draft) {
      case Draft::good: return std::make_unique<DraftModelProposer>(*good_draft_, params, 1, "good");
      case Draft::bad: return std::make_unique<DraftModelProposer>(*bad_draft_, params, 1, "bad");
      case Draft::ngram: return std::make_unique<NgramProposer>(1, 3);
      case Draft::self_prefix: return make_self_speculation_proposer(*target_, 1, params, 1);
    }
    return nullptr;
  }

  static Model* target_;
  static Model* good_draft_;
  static Model* bad_draft_;
};
Model* SpeculativeDistributionTest::target_ = nullptr;
Model* SpeculativeDistributionTest::good_draft_ = nullptr;
Model* SpeculativeDistributionTest::bad_draft_ = nullptr;

const std::vector<int32_t> kPrompt = {1, 10, 11, 12, 10, 11};

SamplingParams params_for(const Case& c) {
  SamplingParams params;
  params.temperature = c.temperature;
  params.top_p = c.top_p;
  params.repetition_penalty = c.repetition_penalty;
  params.seed = 1;
  return params;
}

// For n-gram lookup: a prompt whose repeated part is the target's own greedy continuation, so the
// lookup proposes tokens the target finds likely: [1, g1, g2, g3, 1, g1] → drafts g2, g3, 1.
std::vector<int32_t> greedy_echo_prompt(Model& target) {
  SequenceRunner runner(target, 16, 1);
  std::vector<int32_t> chain = {1};
  const std::vector<float>* logits = &runner.feed(chain);
  for (int i = 0; i < 3; ++i) {
    chain.push_back(argmax(logits->data(), kVocab));
    logits = &runner.feed(std::vector<int32_t>{chain.back()});
  }
  return {1, chain[1], chain[2], chain[3], 1, chain[1]};
}

TEST_P(SpeculativeDistributionTest, JointOfThreeTokensEqualsTarget) {
  const Case& c = GetParam();
  const SamplingParams params = params_for(c);
  const std::vector<int32_t> prompt = c.draft == Draft::ngram ? greedy_echo_prompt(*target_) : kPrompt;
  const std::vector<double> joint = exact_joint(*target_, params, prompt);
  auto proposer = make_proposer(c.draft, params);
  const Sampled sampled = sample_speculative(*target_, *proposer, params, c.gamma, prompt);
  const double p = chi_square_p_value(sampled.counts, joint);
  std::printf("[%s] alpha %.3f, tokens/pass %.3f, chi-square p %.4f\n", c.name, sampled.stats.acceptance_rate(),
              sampled.stats.tokens_per_pass(), p);
  EXPECT_GT(p, 1e-3);
  EXPECT_GT(sampled.stats.num_proposed, 0);
  if (c.draft != Draft::bad) {
    EXPECT_GT(sampled.stats.acceptance_rate(), c.draft == Draft::ngram ? 0.05 : 0.1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SpeculativeDistributionTest,
    ::testing::Values(Case{"good_t07", Draft::good, 0.7f, 1.0f, 1.0f, 2}, Case{"bad_t07", Draft::bad, 0.7f, 1.0f, 1.0f, 2},
                      Case{"good_t10", Draft::good, 1.0f, 1.0f, 1.0f, 3}, Case{"bad_t10", Draft::bad, 1.0f, 1.0f, 1.0f, 3},
                      Case{"good_t07_topp", Draft::good, 0.7f, 0.8f, 1.0f, 2},
                      Case{"bad_t07_topp", Draft::bad, 0.7f, 0.8f, 1.0f, 2},
                      Case{"good_t10_topp", Draft::good, 1.0f, 0.8f, 1.0f, 4},
                      Case{"bad_t10_topp", Draft::bad, 1.0f, 0.8f, 1.0f, 1},
                      Case{"ngram_t10", Draft::ngram, 1.0f, 1.0f, 1.0f, 2},
                      Case{"self1_t07_topp", Draft::self_prefix, 0.7f, 0.9f, 1.0f, 2},
                      Case{"good_t10_penalty", Draft::good, 1.0f, 1.0f, 1.5f, 2}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// The same test must be able to fail: skipping the residual resampling biases the output.
TEST_F(SpeculativeDistributionTest, BrokenVerifierFailsTheTest) {
  const Case c{"broken", Draft::good, 1.0f, 1.0f, 1.0f, 2};
  const SamplingParams params = params_for(c);
  const std::vector<double> joint = exact_joint(*target_, params, kPrompt);
  auto proposer = make_proposer(c.draft, params);
  const Sampled sampled = sample_speculative(*target_, *proposer, params, c.gamma, kPrompt, verify_without_residual);
  const double p = chi_square_p_value(sampled.counts, joint);
  std::printf("[broken] alpha %.3f, chi-square p %.3g\n", sampled.stats.acceptance_rate(), p);
  EXPECT_LT(p, 1e-3);
}

}  // namespace
}  // namespace nucleus
