// Packed F16 row groups (kernels/packed_f16.h): the layout, the AVX-512 kernel against the row-major
// single dot bit for bit, and matmul through a packed matrix equal to the row-major one for every
// token count, thread count and a partial last group.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/packed_f16.h"
#include "kernels/quantize.h"

namespace nucleus {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct F16Matrix {
  std::vector<uint16_t> halves;
  WeightMatrix w;
  F16Matrix(int64_t m, int64_t k, uint32_t seed) {
    const auto values = random_values(static_cast<size_t>(m * k), seed);
    for (float v : values) halves.push_back(f32_to_f16(v));
    w = WeightMatrix{GgmlType::F16, halves.data(), k, m, static_cast<size_t>(k) * 2};
  }
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(PackedF16, LayoutPutsEachChunkOfFourRowsTogetherAndPadsWithZeros) {
  const int64_t m = 6, k = 48;  // two groups, the second with two zero rows; three chunks
  F16Matrix s(m, k, 1);
  ASSERT_TRUE(packable_f16(s.w));
  const auto p = pack_rows_f16(s.w, 2);
  ASSERT_EQ(p->n_groups, 2);
  ASSERT_EQ(p->group_bytes, static_cast<size_t>(4 * k * 2));
  for (int64_t g = 0; g < p->n_groups; ++g) {
    const auto* group = reinterpret_cast<const uint16_t*>(p->group(g));
    for (int row = 0; row < kPackedF16Rows; ++row)
      for (int64_t c = 0; c < k; ++c) {
        const int64_t r = g * kPackedF16Rows + row;
        const uint16_t expected = r < m ? s.halves[static_cast<size_t>(r * k + c)] : uint16_t{0};
        EXPECT_EQ(group[(c / 16) * 64 + row * 16 + c % 16], expected) << "row " << r << ", column " << c;
      }
  }
}

TEST(PackedF16, OnlyF16RowsOfWholeChunksArePacked) {
  F16Matrix odd(4, 40, 2);
  EXPECT_FALSE(packable_f16(odd.w));
  EXPECT_THROW(pack_rows_f16(odd.w, 1), Error);
  std::vector<float> f32(64 * 4);
  WeightMatrix not_f16{GgmlType::F32, f32.data(), 64, 4, 64 * 4};
  EXPECT_FALSE(packable_f16(not_f16));
  // The scalar table has no packed F16 kernel, so it leaves F16 row-major.
  F16Matrix even(4, 64, 3);
  EXPECT_FALSE(packable(even.w, scalar_dot_kernels()));
  pack_weights(even.w, 1, nullptr, scalar_dot_kernels());
  EXPECT_EQ(even.w.packed, nullptr);
}

TEST(PackedF16, KernelEqualsTheSingleDotBitForBit) {
  if (!cpu_supports(Isa::Avx512)) GTEST_SKIP() << "this CPU has no AVX-512 (the packed F16 kernel is AVX-512 only)";
  const DotKernels& simd = dot_kernels_for(Isa::Avx512);
  ASSERT_NE(simd.packed_f16, nullptr);
  for (int64_t k : {16, 48, 1040, 2048}) {
    F16Matrix s(kPackedF16Rows, k, 10 + static_cast<uint32_t>(k));
    const auto p = pack_rows_f16(s.w, 1);
    const auto xs = random_values(static_cast<size_t>(k * kPackedF16MaxTokens), 20 + static_cast<uint32_t>(k));
    const float* x[kDotTokens];
    for (int j = 0; j < kPackedF16MaxTokens; ++j) x[j] = xs.data() + j * k;
    for (int tokens = 1; tokens <= kPackedF16MaxTokens; ++tokens) {
      float out[kPackedF16Rows * kDotTokens];
      simd.packed_f16(reinterpret_cast<const uint16_t*>(p->group(0)), x, tokens, k, out);
      for (int r = 0; r < kPackedF16Rows; ++r)
        for (int j = 0; j < tokens; ++j)
          EXPECT_TRUE(same_bits(out[r * kDotTokens + j], simd.dot_f16_f32(s.halves.data() + r * k, x[j], k)))
              << "k " << k << ", " << tokens << " tokens, row " << r << ", token " << j;
    }
  }
}

TEST(PackedF16, MatmulEqualsTheRowMajorMatmulForEveryTokenCount) {
  // 101 rows: 26 groups, the last with one real row; 272 columns (17 chunks). Tokens 1..33 cover
  // one-token shares, every token-group split and several row tasks, on one and two threads.
  if (!cpu_supports(Isa::Avx512)) GTEST_SKIP() << "this CPU has no AVX-512 (the packed F16 kernel is AVX-512 only)";
  const DotKernels& simd = dot_kernels_for(Isa::Avx512);
  const int64_t m = 101, k = 272;
  F16Matrix row_major(m, k, 30);
  WeightMatrix packed = row_major.w;
  ASSERT_TRUE(packable(packed, simd));
  pack_weights(packed, 2, nullptr, simd);
  ASSERT_NE(packed.packed, nullptr);
  const auto x = random_values(static_cast<size_t>(33 * k), 31);
  MatmulScratch scratch;
  for (int threads : {1, 2})
    for (int64_t n_tokens = 1; n_tokens <= 33; ++n_tokens) {
      std::vector<float> expected(static_cast<size_t>(n_tokens * m)), got(expected.size(), -1.0f);
      matmul(simd, row_major.w, x.data(), n_tokens, expected.data(), threads, scratch);
      matmul(simd, packed, x.data(), n_tokens, got.data(), threads, scratch);
      EXPECT_EQ(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)), 0)
          << n_tokens << " tokens, " << threads << " threads";
    }
}

}  // namespace
}  // namespace nucleus
