// The K-quant tile kernels (kernels/kquant_tile.h): two rows × up to four tokens, direct or from
// prepared rows, and every matmul path that uses them, equal the scalar reference dot bit for bit
// (the scalar table's float orders, see dot_scalar.cpp) for every token count 1–33,
// odd row counts, several block counts and one or two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/quantize.h"
#include "kernels/quantize_k.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

struct KQuantCase {
  GgmlType type;
  int64_t n_blocks;
};

// A random [rows × n_blocks·256] matrix in `type`, 33 random activation rows and the scalar
// reference dot of every (row, token).
struct Problem {
  int64_t k, rows;
  std::vector<uint8_t> stored;
  WeightMatrix w;
  int64_t n_tokens;
  std::vector<float> x;          // [n_tokens, k]
  std::vector<float> reference;  // [n_tokens, rows]
  static constexpr int64_t kTokens = 33;

  Problem(GgmlType type, int64_t n_blocks, int64_t n_rows, uint32_t seed, int64_t tokens = kTokens)
      : k(n_blocks * kQK_K), rows(n_rows), n_tokens(tokens) {
    const size_t row_bytes = ggml_row_size(type, k);
    stored.resize(row_bytes * static_cast<size_t>(rows));
    const auto values = test::normal_values(static_cast<size_t>(k * rows), seed);
    for (int64_t r = 0; r < rows; ++r) quantize_row(type, values.data() + r * k, stored.data() + r * row_bytes, k);
    w.type = type, w.data = stored.data(), w.n_cols = k, w.n_rows = rows, w.row_bytes = row_bytes;
    x = test::normal_values(static_cast<size_t>(n_tokens * k), seed + 1);
    MatmulScratch scratch;
    const MatmulActivations a = prepare_activations(type, x.data(), n_tokens, k, scratch);
    reference.resize(static_cast<size_t>(n_tokens * rows));
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int64_t r = 0; r < rows; ++r) reference[t * rows + r] = dot_row(scalar_dot_kernels(), w, r, a, t);
  }
};

const KQuantTileKernels& tiles_for(const DotKernels& kernels, GgmlType type) {
  return type == GgmlType::Q4_K ? kernels.tile_q4_K : type == GgmlType::Q5_K ? kernels.tile_q5_K : kernels.tile_q6_K;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

class KQuantTiles : public testing::TestWithParam<KQuantCase> {
 protected:
  void SetUp() override {
    if (!cpu_supports(Isa::Avx512)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI (the tiles are in the AVX-512 table only)";
  }
};

TEST_P(KQuantTiles, DirectAndPreparedKernelsEqualTheScalarDotBitForBit) {
  const auto [type, n_blocks] = GetParam();
  const int64_t rows = 3;  // a pair, then a lone row passed as both rows
  Problem problem(type, n_blocks, rows, 40 + static_cast<uint32_t>(n_blocks));
  const KQuantTileKernels& tiles = tiles_for(avx512_dot_kernels(), type);
  ASSERT_TRUE(tiles.direct && tiles.prepare && tiles.prepared);
  MatmulScratch scratch;
  const int64_t n_tokens = Problem::kTokens;
  const MatmulActivations a = prepare_activations(type, problem.x.data(), n_tokens, problem.k, scratch);
  const int64_t padded = (n_tokens + kKQuantTileTokens - 1) / kKQuantTileTokens * kKQuantTileTokens;
  std::vector<int16_t> sub_sums(static_cast<size_t>(n_blocks * padded * 8), 0);
  std::vector<float> d(static_cast<size_t>(n_blocks * padded), 0.0f);
  std::vector<int8_t> qs_storage(static_cast<size_t>(n_tokens * n_blocks * kQK_K + 64));
  int8_t* qs = align_up_64(qs_storage.data());
  fill_kquant_tile_activations(a.q8_K, n_tokens, n_blocks, padded, qs, sub_sums.data(), d.data());
  const KQuantTileActivations x{a.q8_K, qs, sub_sums.data(), d.data(), n_blocks, padded};
  const size_t prepared_row = static_cast<size_t>(n_blocks) * kKQuantPreparedBlockBytes;
  std::vector<uint8_t> storage(prepared_row * rows + 64);
  uint8_t* prepared = align_up_64(storage.data());
  for (int64_t r = 0; r < rows; ++r) tiles.prepare(problem.w.row(r), n_blocks, prepared + r * prepared_row);
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kKQuantTileTokens) {
    for (int n = 1; n <= kKQuantTileTokens && t0 + n <= n_tokens; ++n) {
      for (int64_t r : {int64_t{0}, int64_t{2}}) {
        const int64_t r1 = r + 1 < rows ? r + 1 : r;
        float direct[kKQuantTileRows * kKQuantTileTokens], from_prepared[kKQuantTileRows * kKQuantTileTokens];
        tiles.direct(problem.w.row(r), problem.w.row(r1), x, t0, n, direct);
        // The prepared kernel over rows r .. r1 (one or two), results [token, row] with stride 2.
        float y[kKQuantTileTokens * 2];
        tiles.prepared(prepared + r * prepared_row, prepared_row, r1 - r + 1, x, t0, n, y, 2);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < 2; ++i) from_prepared[i * kKQuantTileTokens + j] = y[2 * j + std::min<int64_t>(i, r1 - r)];
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < n; ++j) {
            const float expected = problem.reference[(t0 + j) * rows + (i == 0 ? r : r1)];
            EXPECT_TRUE(same_bits(direct[i * kKQuantTileTokens + j], expected))
                << "direct, tokens " << t0 << "+" << n << ", row " << r + i << ", token " << j;
            EXPECT_TRUE(same_bits(from_prepared[i * kKQuantTileTokens + j], expected))
                << "prepared, tokens " << t0 << "+" << n << ", row " << r + i << ", token " << j;
          }
      }
    }
  }
}

TEST_P(KQuantTiles, MatmulEqualsTheScalarDotForEveryTokenCount) {
  // 37 rows: a partial last row tile and a lone last row; 1 and 2 threads; every token count 1..33
  // (row kernels below 16 tokens for Q4_K, direct and prepared tiles for Q5_K).
  const auto [type, n_blocks] = GetParam();
  const int64_t rows = 37;
  Problem problem(type, n_blocks, rows, 70 + static_cast<uint32_t>(n_blocks));
  MatmulScratch scratch;
  std::vector<float> y(static_cast<size_t>(Problem::kTokens * rows));
  for (int threads : {1, 2}) {
    for (int64_t n_tokens = 1; n_tokens <= Problem::kTokens; ++n_tokens) {
      matmul(avx512_dot_kernels(), problem.w, problem.x.data(), n_tokens, y.data(), threads, scratch);
      int mismatches = 0;
      for (int64_t i = 0; i < n_tokens * rows; ++i) mismatches += !same_bits(y[i], problem.reference[i]);
      EXPECT_EQ(mismatches, 0) << ggml_type_name(type) << ", " << n_tokens << " tokens, " << threads << " threads";
    }
  }
}

TEST(KQuantTileMatmul, ManyTokensOfEveryTypeEqualTheScalarDot) {
  // Past every type's threshold, with many token groups per prepared row: 130 tokens, 5 rows.
  if (!cpu_supports(Isa::Avx512)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI (the tiles are in the AVX-512 table only)";
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    Problem problem(type, 2, 5, 90, 130);
    MatmulScratch scratch;
    std::vector<float> y(static_cast<size_t>(problem.n_tokens * problem.rows));
    for (int threads : {1, 2}) {
      matmul(avx512_dot_kernels(), problem.w, problem.x.data(), problem.n_tokens, y.data(), threads, scratch);
      int mismatches = 0;
      for (size_t i = 0; i < y.size(); ++i) mismatches += !same_bits(y[i], problem.reference[i]);
      EXPECT_EQ(mismatches, 0) << ggml_type_name(type) << ", " << threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KQuantTiles,
                         testing::Values(KQuantCase{GgmlType::Q4_K, 1}, KQuantCase{GgmlType::Q4_K, 3}, KQuantCase{GgmlType::Q4_K, 8},
                                         KQuantCase{GgmlType::Q5_K, 1}, KQuantCase{GgmlType::Q5_K, 3}, KQuantCase{GgmlType::Q5_K, 8},
                                         KQuantCase{GgmlType::Q6_K, 1}, KQuantCase{GgmlType::Q6_K, 3}, KQuantCase{GgmlType::Q6_K, 8}),
                         [](const testing::TestParamInfo<KQuantCase>& info) {
                           return std::string(ggml_type_name(info.param.type)) + "_" + std::to_string(info.param.n_blocks) + "_blocks";
                         });

}  // namespace
}  // namespace nucleus
