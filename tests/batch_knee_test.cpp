// The two readings of a batching curve that `nucleus bench batch` prints: where throughput
// saturates (find_knee) and how far it rises almost linearly (find_linear_limit). The curves are
// this machine's measured ones (docs/BENCHMARKS.md, TinyLlama Q4_K_M, 2 threads), so the test pins
// what the benchmark reports for them.
#include <gtest/gtest.h>

#include <vector>

#include "engine/batch_benchmark.h"

namespace nucleus {
namespace {

std::vector<BatchPoint> curve(const std::vector<std::pair<int64_t, double>>& rates) {
  std::vector<BatchPoint> points;
  for (const auto& [batch, gen_tok_s] : rates) {
    BatchPoint p;
    p.batch = batch;
    p.gen_tok_s = gen_tok_s;
    points.push_back(p);
  }
  return points;
}

TEST(BatchKnee, AnEngineThatSaturatesEarlyAndHighRisesLinearlyFurtherThanOneThatNeverRisesLinearly) {
  // nucleus: near-linear to 4, then at the compute ceiling (~2× the other's best) from 8.
  const auto fast = curve({{1, 46.9}, {2, 84.6}, {4, 163.4}, {8, 193.6}, {16, 190.6}, {32, 187.2}, {64, 194.0}});
  // llama.cpp (S_TG): 12% more for twice the sequences, then a late step up.
  const auto slow = curve({{1, 44.7}, {2, 50.1}, {4, 55.7}, {8, 61.6}, {16, 90.9}, {32, 90.6}, {64, 80.5}});
  EXPECT_EQ(find_knee(fast), 8);
  EXPECT_EQ(find_knee(slow), 16);
  EXPECT_EQ(find_linear_limit(fast), 4);  // 163.4 / 4 = 40.9 ≥ 0.8 · 46.9; 193.6 / 8 = 24.2 is not
  EXPECT_EQ(find_linear_limit(slow), 1);  // 50.1 / 2 = 25.1 < 0.8 · 44.7 already at 2
}

TEST(BatchKnee, TheLinearLimitStopsAtTheFirstInefficientBatchAndFollowsTheThreshold) {
  // Perfectly linear: the whole curve.
  EXPECT_EQ(find_linear_limit(curve({{1, 10}, {2, 20}, {4, 40}, {8, 80}})), 8);
  // A dip at 4 ends it even if 8 recovers (the limit is a prefix, not the last efficient point).
  EXPECT_EQ(find_linear_limit(curve({{1, 10}, {2, 20}, {4, 30}, {8, 80}})), 2);
  // The threshold: 4 sequences at 30 tok/s are 75% efficient.
  EXPECT_EQ(find_linear_limit(curve({{1, 10}, {2, 20}, {4, 30}}), 0.7), 4);
  EXPECT_EQ(find_linear_limit(curve({{1, 10}, {2, 20}, {4, 30}}), 0.8), 2);
  // Relative to the first point measured, whatever its batch.
  EXPECT_EQ(find_linear_limit(curve({{2, 20}, {4, 40}, {8, 50}})), 4);
  EXPECT_EQ(find_linear_limit({}), 0);
  EXPECT_EQ(find_knee({}), 0);
}

}  // namespace
}  // namespace nucleus
