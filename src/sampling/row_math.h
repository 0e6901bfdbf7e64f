// Row-wide arithmetic of the sampler, written as plain loops the compiler can vectorize, with an
// evaluation order that is fixed by the code (never by the machine or the vector width), so sums —
// and therefore draws — are reproducible bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace nucleus {

// e^x for x ≤ 0 within 1e-7 relative error (tested against std::exp); exactly 0 for x < −87 (so
// −inf logits give probability 0), and for NaN. Range reduction x = n·ln 2 + r with |r| ≤ ln2 / 2,
// then the degree-7 Taylor polynomial of e^r (truncation error r^8/8! < 2e-9), then 2^n via the
// exponent bits.
inline float exp_nonpositive(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693145751953125f;         // ln 2 split so n·kLn2High is exact
  constexpr float kLn2Low = 1.428606765330187045e-06f;
  constexpr float kRoundingShift = 12582912.0f;          // 1.5 · 2^23: adding it rounds to an integer
  const bool representable = x >= -87.0f;                // false for NaN too
  const float clamped = representable ? x : 0.0f;
  const float n = (clamped * kLog2e + kRoundingShift) - kRoundingShift;
  const float r = (clamped - n * kLn2High) - n * kLn2Low;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  bits += static_cast<int32_t>(n) * (1 << 23);  // × 2^n (n ≥ −126 here: no denormals)
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return representable ? result : 0.0f;
}

// Σ x[i] in double, as kLanes interleaved partial sums added in a fixed order at the end.
double blocked_sum(const float* x, size_t n);

// max x[i] (−inf for n = 0; NaN entries are ignored).
float max_value(const float* x, size_t n);
// The smallest and largest finite x[i]; +inf / −inf when there is none.
void finite_range(const float* x, size_t n, float& min, float& max);

// out[i] = e^(x[i] − shift) for x[i] ≤ shift; returns blocked_sum(out, n).
double exp_shifted(const float* x, float shift, float* out, size_t n);

// The first i with threshold < x[0] + … + x[i] (summed block by block in the order blocked_sum
// uses within a block), or n when the total does not exceed the threshold.
size_t inverse_cdf(const float* x, size_t n, double threshold);

}  // namespace nucleus
