#include "core/latency_summary.h"

#include <algorithm>
#include <cmath>

namespace nucleus {

namespace {

// `sorted` is non-empty and ascending; q in [0, 1].
double quantile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

}  // namespace

LatencySummary summarize(std::vector<double> samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  double total = 0;
  for (double x : samples) total += x;
  s.mean = total / static_cast<double>(samples.size());
  s.p50 = quantile(samples, 0.50);
  s.p90 = quantile(samples, 0.90);
  s.p99 = quantile(samples, 0.99);
  return s;
}

}  // namespace nucleus
