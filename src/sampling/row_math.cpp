#include "sampling/row_math.h"

#include <cmath>

namespace nucleus {

namespace {
constexpr size_t kLanes = 16;  // partial sums: breaks the add latency chain, fixed for reproducibility

// Σ of one block of ≤ kLanes values, left to right in double.
double block_sum(const float* x, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += x[i];
  return sum;
}
}  // namespace

double blocked_sum(const float* x, size_t n) {
  double lanes[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
  double sum = 0.0;
  for (size_t j = 0; j < kLanes; ++j) sum += lanes[j];
  return sum + block_sum(x + i, n - i);
}

float max_value(const float* x, size_t n) {
  float lanes[kLanes];
  for (float& lane : lanes) lane = -INFINITY;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  float max = -INFINITY;
  for (float lane : lanes) max = lane > max ? lane : max;
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

void finite_range(const float* x, size_t n, float& min, float& max) {
  constexpr float kLargest = 3.4028235e38f;
  float low[kLanes], high[kLanes];
  for (size_t j = 0; j < kLanes; ++j) low[j] = INFINITY, high[j] = -INFINITY;
  size_t i = 0;
  // |x| ≤ largest float is false for ±inf and NaN: those entries leave the lanes unchanged.
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const float v = x[i + j];
      const bool finite = v <= kLargest && v >= -kLargest;
      low[j] = finite && v < low[j] ? v : low[j];
      high[j] = finite && v > high[j] ? v : high[j];
    }
  }
  min = INFINITY;
  max = -INFINITY;
  for (size_t j = 0; j < kLanes; ++j) {
    min = low[j] < min ? low[j] : min;
    max = high[j] > max ? high[j] : max;
  }
  for (; i < n; ++i) {
    const bool finite = x[i] <= kLargest && x[i] >= -kLargest;
    min = finite && x[i] < min ? x[i] : min;
    max = finite && x[i] > max ? x[i] : max;
  }
}

double exp_shifted(const float* x, float shift, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = exp_nonpositive(x[i] - shift);
  return blocked_sum(out, n);
}

size_t inverse_cdf(const float* x, size_t n, double threshold) {
  // Whole blocks are skipped by their sum; the block that crosses is scanned entry by entry.
  double cumulative = 0.0;
  for (size_t start = 0; start < n; start += kLanes) {
    const size_t length = n - start < kLanes ? n - start : kLanes;
    const double block = block_sum(x + start, length);
    if (threshold < cumulative + block) {
      for (size_t i = start; i < start + length; ++i) {
        cumulative += x[i];
        if (threshold < cumulative) return i;
      }
      // Rounding put the crossing past the block's own running sum: its last non-zero entry.
      for (size_t i = start + length; i-- > start;)
        if (x[i] > 0.0f) return i;
    }
    cumulative += block;
  }
  return n;
}

}  // namespace nucleus
