// Packed F16 and BF16 row groups (kernels/packed_f16.h): the layout, the AVX-512 kernels against the
// row-major ones bit for bit, and matmul through a packed matrix equal to the row-major one for
// every token count 1-33, one and two threads and a partial last group.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/packed_f16.h"
#include "kernels/quantize.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

struct HalfMatrix {
  std::vector<uint16_t> halves;
  WeightMatrix w;
  HalfMatrix(GgmlType type, int64_t m, int64_t k, uint32_t seed) {
    for (float v : test::normal_values(static_cast<size_t>(m * k), seed))
      halves.push_back(type == GgmlType::BF16 ? f32_to_bf16(v) : f32_to_f16(v));
    w = WeightMatrix{type, halves.data(), k, m, static_cast<size_t>(k) * 2, /*packed=*/{}, /*copy=*/{}};
  }
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// The AVX-512 table where it has this type's packed kernel; null (the test skips) elsewhere.
const DotKernels* packed_table(GgmlType type) {
  if (!cpu_supports(Isa::Avx512)) return nullptr;
  const DotKernels& simd = dot_kernels_for(Isa::Avx512);
  return (type == GgmlType::F16 ? simd.packed_f16 != nullptr : simd.packed_bf16 != nullptr) ? &simd : nullptr;
}

class PackedHalf : public ::testing::TestWithParam<GgmlType> {};

TEST_P(PackedHalf, LayoutPutsEachChunkOfFourRowsTogetherAndPadsWithZeros) {
  const GgmlType type = GetParam();
  const int chunk = packed_half_chunk(type);
  const int64_t m = 6, k = 3 * chunk;  // two groups, the second with two zero rows; three chunks
  HalfMatrix s(type, m, k, 1);
  ASSERT_TRUE(packable_half(s.w));
  const auto p = pack_rows_half(s.w, 2);
  ASSERT_EQ(p->n_groups, 2);
  ASSERT_EQ(p->group_bytes, static_cast<size_t>(4 * k * 2));
  for (int64_t g = 0; g < p->n_groups; ++g) {
    const auto* group = reinterpret_cast<const uint16_t*>(p->group(g));
    for (int row = 0; row < kPackedHalfRows; ++row)
      for (int64_t c = 0; c < k; ++c) {
        const int64_t r = g * kPackedHalfRows + row;
        const uint16_t expected = r < m ? s.halves[static_cast<size_t>(r * k + c)] : uint16_t{0};
        EXPECT_EQ(group[(c / chunk) * 4 * chunk + row * chunk + c % chunk], expected) << "row " << r << ", column " << c;
      }
  }
}

TEST_P(PackedHalf, OnlyRowsOfWholeChunksArePacked) {
  const GgmlType type = GetParam();
  HalfMatrix odd(type, 4, packed_half_chunk(type) + 8, 2);
  EXPECT_FALSE(packable_half(odd.w));
  EXPECT_THROW(pack_rows_half(odd.w, 1), Error);
  // The scalar table has no packed kernel for it, so it leaves the matrix row-major.
  HalfMatrix even(type, 4, 64, 3);
  EXPECT_FALSE(packable(even.w, scalar_dot_kernels()));
  pack_weights(even.w, 1, nullptr, scalar_dot_kernels());
  EXPECT_EQ(even.w.packed, nullptr);
}

TEST_P(PackedHalf, KernelEqualsTheRowMajorTileBitForBit) {
  const GgmlType type = GetParam();
  const DotKernels* simd = packed_table(type);
  if (!simd) GTEST_SKIP() << "this CPU has no packed " << ggml_type_name(type) << " kernel (AVX-512" << (type == GgmlType::BF16 ? "_BF16" : "") << ")";
  for (int64_t k : {32, 96, 1056, 2048}) {
    HalfMatrix s(type, kPackedHalfRows, k, 10 + static_cast<uint32_t>(k));
    const auto p = pack_rows_half(s.w, 1);
    const auto xf = test::normal_values(static_cast<size_t>(k * kPackedHalfMaxTokens), 20 + static_cast<uint32_t>(k));
    std::vector<uint16_t> xb(xf.size());
    simd->round_to_bf16(xf.data(), xb.data(), static_cast<int64_t>(xf.size()));
    const float* x[kDotTokens];
    const uint16_t* xh[kDotTokens];
    for (int j = 0; j < kPackedHalfMaxTokens; ++j) x[j] = xf.data() + j * k, xh[j] = xb.data() + j * k;
    const auto* group = reinterpret_cast<const uint16_t*>(p->group(0));
    for (int tokens = 1; tokens <= kPackedHalfMaxTokens; ++tokens) {
      float out[kPackedHalfRows * kDotTokens];
      if (type == GgmlType::F16) simd->packed_f16(group, x, tokens, k, out);
      else simd->packed_bf16(group, xh, tokens, k, out);
      for (int r = 0; r < kPackedHalfRows; ++r) {
        const uint16_t* row = s.halves.data() + r * k;
        float single[kDotTokens * kMaxBF16TileRows];
        for (int j = 0; j < tokens; ++j) {
          float expected = 0;
          if (type == GgmlType::F16) {
            expected = simd->dot_f16_f32(row, x[j], k);
          } else {
            simd->tile_bf16(&row, 1, &row, &xh[j], 1, k, single);
            expected = single[0];
          }
          EXPECT_TRUE(same_bits(out[r * kDotTokens + j], expected))
              << "k " << k << ", " << tokens << " tokens, row " << r << ", token " << j;
        }
      }
    }
  }
}

TEST_P(PackedHalf, MatmulEqualsTheRowMajorMatmulForEveryTokenCount) {
  // 101 rows: 26 groups, the last with one real row; 17 chunks of columns. Tokens 1..33 cover
  // one-token shares, every token-group split and several row tasks, on one and two threads.
  const GgmlType type = GetParam();
  const DotKernels* simd = packed_table(type);
  if (!simd) GTEST_SKIP() << "this CPU has no packed " << ggml_type_name(type) << " kernel";
  const int64_t m = 101, k = 17 * packed_half_chunk(type);
  HalfMatrix row_major(type, m, k, 30);
  WeightMatrix packed = row_major.w;
  ASSERT_TRUE(packable(packed, *simd));
  pack_weights(packed, 2, nullptr, *simd);
  ASSERT_NE(packed.packed, nullptr);
  const auto x = test::normal_values(static_cast<size_t>(33 * k), 31);
  MatmulScratch scratch;
  for (int threads : {1, 2})
    for (int64_t n_tokens = 1; n_tokens <= 33; ++n_tokens) {
      std::vector<float> expected(static_cast<size_t>(n_tokens * m)), got(expected.size(), -1.0f);
      matmul(*simd, row_major.w, x.data(), n_tokens, expected.data(), threads, scratch);
      matmul(*simd, packed, x.data(), n_tokens, got.data(), threads, scratch);
      EXPECT_EQ(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)), 0)
          << n_tokens << " tokens, " << threads << " threads";
    }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedHalf, ::testing::Values(GgmlType::F16, GgmlType::BF16),
                         [](const ::testing::TestParamInfo<GgmlType>& info) { return std::string(ggml_type_name(info.param)); });

}  // namespace
}  // namespace nucleus
