// BF16 weights against BF16-rounded activations (kernels/tile_bf16.h): the AVX512_BF16 tiles give
// the scalar reference's bits for every token count, row count and length (including lengths
// that end inside a 32-column step), and matmul uses that order for every number of tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/tile_bf16.h"

namespace nucleus {
namespace {

std::vector<const DotKernels*> supported_tables() {
  std::vector<const DotKernels*> tables = {&scalar_dot_kernels()};
  if (cpu_supports(Isa::Avx2)) tables.push_back(&avx2_dot_kernels());
  if (cpu_supports(Isa::Avx512)) tables.push_back(&avx512_dot_kernels());
  return tables;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Random BF16 values over many binades, with zeros of both signs and subnormals mixed in (the
// instruction reads a subnormal as zero; the reference must too).
std::vector<uint16_t> random_bf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (auto& h : v) {
    const uint32_t pick = rng() % 64;
    const uint32_t sign = (rng() & 1) << 15, mantissa = rng() & 0x7f;
    if (pick == 0) h = static_cast<uint16_t>(sign);                         // ±0
    else if (pick == 1) h = static_cast<uint16_t>(sign | (mantissa | 1));   // subnormal
    else h = static_cast<uint16_t>(sign | ((110 + rng() % 36) << 7) | mantissa);  // 2^-17 .. 2^18
  }
  return v;
}

TEST(BF16Tiles, TheTableHasThemExactlyWhereTheCpuDoes) {
  EXPECT_EQ(scalar_dot_kernels().tile_bf16, nullptr);
  if (cpu_supports(Isa::Avx2)) {
    EXPECT_EQ(avx2_dot_kernels().tile_bf16, nullptr);
  }
  if (cpu_supports(Isa::Avx512)) {
    EXPECT_EQ(avx512_dot_kernels().tile_bf16 != nullptr, cpu_has_avx512_bf16());
  }
}

TEST(BF16Tiles, ReferenceFollowsTheInstructionsSteps) {
  // Cases worked by hand, one per rule of kernels/tile_bf16.h.
  auto dot = [](std::vector<float> w, std::vector<float> x) {
    std::vector<uint16_t> wb, xb;
    for (float f : w) wb.push_back(f32_to_bf16(f));
    for (float f : x) xb.push_back(f32_to_bf16(f));
    return dot_bf16_pairs_reference(wb.data(), xb.data(), static_cast<int64_t>(w.size()));
  };
  EXPECT_EQ(dot({1.0f, 0.0f}, {1.0f, 0.0f}), 1.0f);
  // Odd column before even, each add rounded. Lane 0, step 0: 0 + 1 (column 1), then 1 + 2^-24
  // (column 0) → 1, a tie kept even; step 1: 1 + 2^-24 (column 33) → 1, then 1 - 1 (column 32) = 0.
  // Even first would end at 2^-24, the exact sum is 2^-23.
  std::vector<float> w(64, 0.0f), x(64, 1.0f);
  w[1] = 1.0f, w[0] = 0x1p-24f, w[33] = 0x1p-24f, w[32] = -1.0f;
  EXPECT_EQ(dot(w, x), 0.0f);
  // Lanes l and l + 8 are added first: lane 0 = 2^24 (column 0), lane 1 = 1 (column 2), lane 9 = 1
  // (column 18): a1 = 2, and 2^24 + 2 is exact; lane by lane from 0 it would stay at 2^24.
  std::vector<float> w2(32, 0.0f), x2(32, 1.0f);
  w2[0] = 0x1p24f, w2[2] = 1.0f, w2[18] = 1.0f;
  EXPECT_EQ(dot(w2, x2), 0x1p24f + 2.0f);
  // Subnormal inputs count as zero; a subnormal result is flushed.
  const uint16_t tiny = 0x0040, two = f32_to_bf16(2.0f);  // 2^-127 (subnormal) and 2
  uint16_t ws[2] = {0, tiny}, xs[2] = {0, two};
  EXPECT_EQ(dot_bf16_pairs_reference(ws, xs, 2), 0.0f);
  const uint16_t min_normal = 0x0080, half = f32_to_bf16(0.5f);  // 2^-126 · 0.5 is subnormal
  uint16_t wm[2] = {0, min_normal}, xm[2] = {0, half};
  EXPECT_EQ(dot_bf16_pairs_reference(wm, xm, 2), 0.0f);
  uint16_t wn[2] = {0, min_normal}, xn[2] = {0, two};
  EXPECT_EQ(dot_bf16_pairs_reference(wn, xn, 2), 0x1p-125f);
}

TEST(BF16Tiles, MatchTheReferenceForEveryTokenAndRowCount) {
  int tables_with_tiles = 0;
  for (const DotKernels* table : supported_tables()) {
    if (!table->tile_bf16) continue;
    ++tables_with_tiles;
    for (int64_t n : {1, 2, 17, 31, 32, 33, 63, 64, 65, 255, 1037, 2048 + 13}) {
      const auto w = random_bf16(static_cast<size_t>(n * kMaxBF16TileRows), static_cast<uint32_t>(n));
      const auto x = random_bf16(static_cast<size_t>(n * kDotTokens), static_cast<uint32_t>(n + 7));
      for (int tokens = 1; tokens <= kDotTokens; ++tokens) {
        for (int rows = 1; rows <= bf16_tile_rows(tokens); ++rows) {
          const uint16_t* w_rows[kMaxBF16TileRows];
          const uint16_t* x_rows[kDotTokens];
          for (int r = 0; r < rows; ++r) w_rows[r] = w.data() + r * n;
          for (int j = 0; j < tokens; ++j) x_rows[j] = x.data() + j * n;
          float out[kMaxBF16TileRows * kDotTokens];
          table->tile_bf16(w_rows, rows, w_rows, x_rows, tokens, n, out);
          for (int r = 0; r < rows; ++r)
            for (int j = 0; j < tokens; ++j) {
              const float expected = dot_bf16_pairs_reference(w_rows[r], x_rows[j], n);
              ASSERT_EQ(bits_of(out[r * kDotTokens + j]), bits_of(expected))
                  << isa_name(table->isa) << " n " << n << " tokens " << tokens << " rows " << rows << " row " << r
                  << " token " << j << ": " << out[r * kDotTokens + j] << " vs " << expected;
            }
        }
      }
    }
  }
  // Where the CPU has AVX512_BF16 the AVX-512 table must have been compared above.
  if (cpu_supports(Isa::Avx512) && cpu_has_avx512_bf16()) {
    EXPECT_EQ(tables_with_tiles, 1);
  }
}

TEST(BF16Tiles, EveryTableRoundsActivationsLikeTheScalarConversion) {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, float_of(0x3f808000), float_of(0x3f818000),  // ties: even stays, odd up
                          float_of(0x3f808001), float_of(0x00000001), float_of(0x807fffff),     // subnormals
                          3.4028235e38f, -3.4028235e38f, INFINITY, -INFINITY,                   // overflow to ±inf
                          float_of(0x7f800001), float_of(0xffc00001), float_of(0x7fffffff)};    // NaNs → quiet
  std::mt19937 rng(5);
  while (x.size() < 100) x.push_back(float_of(rng()));
  for (const DotKernels* table : supported_tables()) {
    for (size_t n = 1; n <= x.size(); ++n) {
      std::vector<uint16_t> got(n + 1, 0xabcd), expected(n);
      table->round_to_bf16(x.data(), got.data(), static_cast<int64_t>(n));
      round_to_bf16_scalar(x.data(), expected.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], expected[i]) << isa_name(table->isa) << " value " << i;
      EXPECT_EQ(got[n], 0xabcd) << "wrote past the end, n " << n;
    }
  }
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808000)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(float_of(0x3f818000)), 0x3f82);
  EXPECT_EQ(f32_to_bf16(float_of(0x7f800001)), 0x7fc0);
}

TEST(Matmul, BF16WeightsGiveTheTablesOrderForEveryNumberOfTokens) {
  // Each y[t, r] of a BF16 matmul is, where the table has BF16 tiles, the reference dot of row r
  // with token t rounded to BF16 — alone or among 1–17 tokens, on 1 or 2 threads; elsewhere it is
  // the table's dot_bf16_f32 on the f32 activations.
  const int64_t k = 333, m = 37;
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> w(static_cast<size_t>(k * m));
  for (auto& h : w) h = f32_to_bf16(normal(rng));
  WeightMatrix matrix;
  matrix.type = GgmlType::BF16, matrix.data = w.data(), matrix.n_cols = k, matrix.n_rows = m, matrix.row_bytes = static_cast<size_t>(k) * 2;
  std::vector<float> x(static_cast<size_t>(17 * k));
  for (auto& v : x) v = normal(rng);
  for (const DotKernels* table : supported_tables()) {
    for (int64_t n_tokens : {1, 2, 5, 8, 9, 17}) {
      for (int threads : {1, 2}) {
        std::vector<float> y(static_cast<size_t>(n_tokens * m));
        MatmulScratch scratch;
        matmul(*table, matrix, x.data(), n_tokens, y.data(), threads, scratch);
        for (int64_t t = 0; t < n_tokens; ++t) {
          std::vector<uint16_t> xb(static_cast<size_t>(k));
          round_to_bf16_scalar(x.data() + t * k, xb.data(), k);
          for (int64_t r = 0; r < m; ++r) {
            const uint16_t* row = w.data() + r * k;
            const float expected = table->tile_bf16 ? dot_bf16_pairs_reference(row, xb.data(), k)
                                                    : table->dot_bf16_f32(row, x.data() + t * k, k);
            ASSERT_EQ(bits_of(y[static_cast<size_t>(t * m + r)]), bits_of(expected))
                << isa_name(table->isa) << " tokens " << n_tokens << " threads " << threads << " t " << t << " r " << r;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nucleus
