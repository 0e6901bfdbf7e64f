// Every table's activation quantizers write the scalar reference's bytes (kernels/quantize_activations.h),
// on rows built to hit the cases where a SIMD version could differ: rounding ties, a maximum |x|
// held by values of both signs (Q8_K takes the first one's sign), all-zero blocks, subnormal and
// huge magnitudes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dot.h"
#include "kernels/quantize.h"
#include "kernels/quantize_activations.h"
#include "kernels/quantize_k.h"

namespace nucleus {
namespace {

constexpr int64_t kCols = 4096;  // 128 Q8_0 blocks, 16 Q8_K blocks

// Row r of the test set: a random row with one of several shapes per block.
std::vector<float> test_row(int r) {
  std::mt19937 rng(1000 + r);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 6);
  // 1e-34: the scale rounds to a zero f16, while 127 / amax stays finite (a smaller amax would make
  // it inf and the reference's float-to-int conversion undefined).
  const float magnitudes[] = {1.0f, 1e-3f, 3e4f, 1e-34f, 1e30f, 0.25f};
  std::vector<float> x(kCols);
  for (int64_t b = 0; b < kCols / 32; ++b) {
    float* xb = x.data() + b * 32;
    const int shape = pick(rng);
    const float mag = magnitudes[(r + b) % 6];
    for (int j = 0; j < 32; ++j) xb[j] = normal(rng) * mag;
    if (shape == 0) {
      for (int j = 0; j < 32; ++j) xb[j] = 0.0f;  // zero block (and, 8 in a row, a zero Q8_K block)
    } else if (shape == 1) {
      // amax 127 makes the Q8_0 scale 1: halves are exact ties for round-half-even
      for (int j = 0; j < 32; ++j) xb[j] = static_cast<float>(static_cast<int>(normal(rng) * 40) % 127) + 0.5f;
      xb[5] = 127.0f;
    } else if (shape == 2) {
      xb[3] = -7.0f * mag, xb[17] = 7.0f * mag;  // the largest |x| with both signs, negative first
    } else if (shape == 3) {
      xb[3] = 7.0f * mag, xb[17] = -7.0f * mag;  // positive first
    }
  }
  if (r % 4 == 0)  // a whole zero Q8_K block
    for (int j = 0; j < 256; ++j) x[512 + j] = 0.0f;
  // Q8_K blocks whose largest |x| is held by both signs, in either order: 16 values apart in one
  // block, and 8 apart (within one 16-value vector).
  const float top = r % 2 ? 1e32f : -1e32f;
  x[1280 + 10 + r % 7] = top, x[1280 + 26 + r % 7] = -top;
  x[1536 + 16 * (r % 16) + r % 8] = -top, x[1536 + 16 * (r % 16) + 8 + r % 8] = top;
  return x;
}

std::vector<Isa> tables() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (cpu_supports(isa)) isas.push_back(isa);
  return isas;
}

TEST(QuantizeActivations, Q8_0RowsAndPackedExtrasEqualTheScalarBytes) {
  const int64_t nb = kCols / 32;
  for (Isa isa : tables()) {
    const DotKernels& kernels = dot_kernels_for(isa);
    for (int r = 0; r < 40; ++r) {
      const std::vector<float> x = test_row(r);
      std::vector<BlockQ8_0> want(nb), got(nb);
      std::vector<float> want_scale(nb), got_scale(nb, -1.0f);
      std::vector<int32_t> want_sum(nb), got_sum(nb, -1), want_chunks(8 * nb), got_chunks(8 * nb, -1);
      quantize_q8_0_row_scalar(x.data(), kCols, want.data(), want_scale.data(), want_sum.data(), want_chunks.data());
      kernels.quantize_q8_0(x.data(), kCols, got.data(), got_scale.data(), got_sum.data(), got_chunks.data());
      ASSERT_EQ(std::memcmp(want.data(), got.data(), nb * sizeof(BlockQ8_0)), 0) << isa_name(isa) << " row " << r;
      ASSERT_EQ(std::memcmp(want_scale.data(), got_scale.data(), nb * sizeof(float)), 0) << isa_name(isa) << " row " << r;
      ASSERT_EQ(want_sum, got_sum) << isa_name(isa) << " row " << r;
      ASSERT_EQ(want_chunks, got_chunks) << isa_name(isa) << " row " << r;
      // The scalar path is the reference quantizer itself (not a copy of it).
      std::vector<BlockQ8_0> plain(nb);
      quantize_activations_q8_0(x.data(), plain.data(), kCols);
      ASSERT_EQ(std::memcmp(plain.data(), got.data(), nb * sizeof(BlockQ8_0)), 0) << isa_name(isa) << " row " << r;
    }
  }
}

TEST(QuantizeActivations, Q8_KRowsEqualTheScalarBytes) {
  const int64_t nb = kCols / 256;
  for (Isa isa : tables()) {
    const DotKernels& kernels = dot_kernels_for(isa);
    for (int r = 0; r < 40; ++r) {
      const std::vector<float> x = test_row(r);
      std::vector<BlockQ8_K> want(nb), got(nb);
      std::memset(got.data(), 0x5a, nb * sizeof(BlockQ8_K));
      quantize_activations_q8_K(x.data(), want.data(), kCols);
      kernels.quantize_q8_K(x.data(), got.data(), kCols);
      for (int64_t b = 0; b < nb; ++b)
        ASSERT_EQ(std::memcmp(&want[b], &got[b], sizeof(BlockQ8_K)), 0) << isa_name(isa) << " row " << r << " block " << b;
    }
  }
}

// The cases the rows above are built for do occur in them (else the test would prove less).
TEST(QuantizeActivations, TheTestRowsHoldTiesSignedMaximaAndZeroBlocks) {
  int ties = 0, negative_first = 0, zero_blocks = 0;
  for (int r = 0; r < 40; ++r) {
    const std::vector<float> x = test_row(r);
    for (int64_t b = 0; b < kCols / 32; ++b) {
      const float* xb = x.data() + b * 32;
      bool zero = true;
      for (int j = 0; j < 32; ++j) {
        zero = zero && xb[j] == 0.0f;
        ties += xb[5] == 127.0f && xb[j] - std::floor(xb[j]) == 0.5f;  // floor: no int conversion of ±1e32
      }
      zero_blocks += zero;
      negative_first += xb[3] < 0 && xb[17] == -xb[3];
    }
  }
  EXPECT_GT(ties, 1000);
  EXPECT_GT(negative_first, 50);
  EXPECT_GT(zero_blocks, 50);
  int k_signed_maxima = 0;
  for (int r = 0; r < 40; ++r) {
    const std::vector<float> x = test_row(r);
    for (int64_t b = 0; b < kCols / 256; ++b) {
      float amax = 0;
      for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[b * 256 + j]));
      int first = -1, last = -1;
      for (int j = 0; j < 256; ++j)
        if (amax > 0 && std::fabs(x[b * 256 + j]) == amax) (first < 0 ? first : last) = j;
      k_signed_maxima += last >= 0 && x[b * 256 + first] == -x[b * 256 + last];
    }
  }
  EXPECT_GE(k_signed_maxima, 40);
}

}  // namespace
}  // namespace nucleus
