// Logprobs: raw ones are the model's log_softmax whatever the chain does; processed ones describe the
// distribution the draw used (truncated tokens −inf); the alternatives are ranked, ties by lower id.
#include <gtest/gtest.h>

#include <cmath>

#include "sampling/logprobs.h"
#include "sampling/sampler.h"

namespace nucleus {
namespace {

TEST(Logprobs, RawAreTheModelsLogSoftmax) {
  const std::vector<float> logits = {1.0f, 3.0f, 0.0f, 3.0f, -2.0f};
  const auto lp = logprobs_from_logits(logits.data(), 5, 2, 3);
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l);
  EXPECT_NEAR(lp.chosen.logprob, 0.0 - std::log(sum), 1e-6);
  EXPECT_EQ(lp.chosen.token, 2);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].token, 1);  // tie with id 3: the lower id first
  EXPECT_EQ(lp.top[1].token, 3);
  EXPECT_EQ(lp.top[2].token, 0);
  EXPECT_NEAR(lp.top[0].logprob, 3.0 - std::log(sum), 1e-6);
  EXPECT_TRUE(logprobs_from_logits(logits.data(), 5, 2, 0).top.empty());
  EXPECT_EQ(logprobs_from_logits(logits.data(), 5, 2, 10).top.size(), 5u);
}

TEST(Logprobs, ProcessedDescribeTheChainsDistribution) {
  const std::vector<float> logits = {1.0f, 3.0f, 0.0f, 2.5f, -2.0f};
  SamplingParams p;
  p.seed = 1;
  p.temperature = 0.5f;
  p.top_k = 2;  // keeps ids 1 and 3
  SamplerChain chain(p);
  const Candidates& distribution = chain.distribution(logits.data(), 5, {});
  const int32_t token = chain.sample(logits.data(), 5, 0);
  const auto lp = logprobs_from_candidates(distribution, token, 4);
  // After temperature 0.5 and top-k 2: p(1) = e^6 / (e^6 + e^5).
  const double p1 = std::exp(6.0) / (std::exp(6.0) + std::exp(5.0));
  ASSERT_EQ(lp.top.size(), 2u);  // only the survivors have alternatives
  EXPECT_EQ(lp.top[0].token, 1);
  EXPECT_NEAR(lp.top[0].logprob, std::log(p1), 1e-6);
  EXPECT_NEAR(lp.top[1].logprob, std::log(1.0 - p1), 1e-6);
  const auto dropped = logprobs_from_candidates(chain.distribution(logits.data(), 5, {}), 0, 0);
  EXPECT_EQ(dropped.chosen.logprob, -INFINITY);
}

TEST(Logprobs, ProcessedUnderGreedyUseTheEditedLogits) {
  const std::vector<float> logits = {1.0f, 3.0f, 0.0f};
  SamplingParams p;
  p.seed = 1;
  p.temperature = 0.0f;
  p.logit_bias = {{1, -2.0f}};  // 3 → 1: ids 0 and 1 tie
  SamplerChain chain(p);
  EXPECT_EQ(chain.sample(logits.data(), 3, 0), 0);  // tie: the lower id
  const auto lp = logprobs_from_candidates(chain.distribution(logits.data(), 3, {}), 0, 2);
  const double normalizer = std::log(2.0 * std::exp(1.0) + 1.0);
  EXPECT_NEAR(lp.chosen.logprob, 1.0 - normalizer, 1e-6);
  EXPECT_EQ(lp.top[0].token, 0);
  EXPECT_EQ(lp.top[1].token, 1);
}

}  // namespace
}  // namespace nucleus
