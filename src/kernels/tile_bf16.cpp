// The scalar reference of kernels/tile_bf16.h: the VDPBF16PS lane steps written out.
#include "kernels/tile_bf16.h"

#include <cmath>

#include "core/fp16.h"

namespace nucleus {

namespace {

float flush_subnormal(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }

// One lane step: lane + w·x with one rounding (a product of two BF16 values is exact in f32, so
// fma is the instruction's multiply-add), subnormal inputs as zero, a subnormal result flushed.
float lane_step(float lane, uint16_t w, uint16_t x) {
  const float a = flush_subnormal(bf16_to_f32(w)), b = flush_subnormal(bf16_to_f32(x));
  return flush_subnormal(std::fma(a, b, flush_subnormal(lane)));
}

}  // namespace

float dot_bf16_pairs_reference(const uint16_t* w, const uint16_t* x, int64_t n) {
  float lane[16] = {};
  for (int64_t s = 0; s < n; s += 32) {
    for (int l = 0; l < 16; ++l) {
      const int64_t odd = s + 2 * l + 1, even = s + 2 * l;
      lane[l] = lane_step(lane[l], odd < n ? w[odd] : 0, odd < n ? x[odd] : 0);
      lane[l] = lane_step(lane[l], even < n ? w[even] : 0, even < n ? x[even] : 0);
    }
  }
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = lane[i] + lane[i + 8];
  return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

void round_to_bf16_scalar(const float* x, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

}  // namespace nucleus
