// Summary statistics of a latency sample for the benchmarks: mean and percentiles.
// Lives in core/ so both the library's workload replay (engine/workload) and the bench commands use it.
#pragma once
#include <vector>

namespace nucleus {

struct LatencySummary {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;  // same unit as the samples; all 0 for an empty sample
};

// Percentiles by linear interpolation between closest ranks (numpy's default), so p50 of {1, 2} is 1.5.
LatencySummary summarize(std::vector<double> samples);

}  // namespace nucleus
