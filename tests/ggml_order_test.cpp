// kernels/ggml_order.h: llama.cpp's (ggml's AVX-512) float order, which the operator tables follow
// so that nucleus's activations equal llama.cpp's bit for bit (tests/model_fidelity_test.cpp shows
// the result on real files; these tests pin the order itself with sums whose value depends on it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/ggml_order.h"

namespace nucleus {
namespace {

int64_t ulps(float a, float b) {
  int32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  if (x < 0) x = INT32_MIN - x;
  if (y < 0) y = INT32_MIN - y;
  return std::llabs(static_cast<int64_t>(x) - y);
}

TEST(GgmlOrder, DotFoldsLaneLWithLanePlus32BeforeTheRest) {
  // x·y over 64 elements with products 1e8 (lane 0), 1 (lane 1), −1e8 (lane 32). A serial f32 sum
  // loses the 1 against 1e8 and gives 0; ggml cancels lanes 0 and 32 first and keeps it.
  std::vector<float> x(64, 0.0f), y(64, 1.0f);
  x[0] = 1e8f;
  x[1] = 1.0f;
  x[32] = -1e8f;
  EXPECT_EQ(ggml_dot(x.data(), y.data(), 64), 1.0f);
  // Lanes 0 and 16 meet only after (0 + 32) and (16 + 48): 1e8 + 1 − 1e8 in that grouping is 0.
  x[32] = 1.0f;
  x[1] = 0.0f;
  x[16] = -1e8f;
  EXPECT_EQ(ggml_dot(x.data(), y.data(), 64), 0.0f);
}

TEST(GgmlOrder, TreeAddsLaneIToLaneIPlus8First) {
  float v[16] = {};
  v[0] = 1e8f;
  v[8] = -1e8f;
  v[4] = 1.0f;  // meets lane 0 only after lanes 0 and 8 cancelled
  EXPECT_EQ(ggml_tree16(v), 1.0f);
  v[8] = 0.0f;
  v[4] = -1e8f;
  v[12] = 1.0f;  // (4 + 12) rounds the 1 away before lane 0 cancels lane 4
  EXPECT_EQ(ggml_tree16(v), 0.0f);
}

TEST(GgmlOrder, DotTailIsFusedOntoTheFoldedSumInOrder) {
  std::vector<float> x(70, 0.0f), y(70, 1.0f);
  x[0] = 1.0f;
  x[64] = 1e8f;   // the tail after the 64-lane part: 1 + 1e8 rounds to 1e8
  x[65] = -1e8f;  // then 0
  EXPECT_EQ(ggml_dot(x.data(), y.data(), 70), 0.0f);
  EXPECT_EQ(ggml_dot(x.data(), y.data(), 1), 1.0f);  // shorter than one step: the tail only
}

TEST(GgmlOrder, ExpIsWithinTwoUlpOfStdExpAndSaturates) {
  int64_t worst = 0;
  for (float v = -87.0f; v <= 88.0f; v += 0.00731f) {
    const int64_t d = ulps(ggml_exp(v), std::exp(v));
    worst = std::max(worst, d);
    ASSERT_LE(d, 2) << "exp(" << v << ")";
  }
  RecordProperty("worst_ulp", std::to_string(worst));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(ggml_exp(0.0f), 1.0f);
  EXPECT_EQ(ggml_exp(-inf), 0.0f);
  EXPECT_EQ(ggml_exp(-1000.0f), 0.0f);
  EXPECT_EQ(ggml_exp(1000.0f), inf);
  EXPECT_TRUE(std::isnan(ggml_exp(std::nanf(""))));
  // Results below the normal range are rounded once, like the true value.
  EXPECT_LE(ulps(ggml_exp(-100.0f), std::exp(-100.0f)), 2);
}

TEST(GgmlOrder, AttentionSoftmaxIsANormalizedExpWithChunksAlignedToPositionZero) {
  // Positions 5..40 (a sliding window starting at 5): weights are exp(s − max) / Σ, within a few
  // ulp of the direct formula, and sum to 1.
  std::vector<float> scores;
  for (int p = 5; p < 41; ++p) scores.push_back(std::sin(0.37f * p) * 4.0f);
  std::vector<float> weights = scores;
  ggml_attention_softmax(weights.data(), 5, 41);
  double max = -1e30, total = 0.0;
  for (float s : scores) max = std::max(max, static_cast<double>(s));
  for (float s : scores) total += std::exp(s - max);
  double sum = 0.0;
  for (size_t i = 0; i < scores.size(); ++i) {
    EXPECT_NEAR(weights[i], std::exp(scores[i] - max) / total, 4e-7) << i;
    sum += weights[i];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

}  // namespace
}  // namespace nucleus
