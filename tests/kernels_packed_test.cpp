// Packed Q4_0 / Q8_0 row groups: every table's packed kernel, for any number of rows (padded
// groups), columns and tokens, gives bit-identical results to the scalar row-major dot product.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/packed_dot.h"
#include "kernels/packed_rows.h"
#include "kernels/quantize.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

struct StoredMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

StoredMatrix random_matrix(GgmlType type, int64_t m, int64_t k, uint32_t seed) {
  StoredMatrix s;
  const size_t row_bytes = ggml_row_size(type, k);
  s.bytes.resize(row_bytes * static_cast<size_t>(m));
  auto values = test::normal_values(static_cast<size_t>(m * k), seed);
  for (int64_t r = 0; r < m; ++r) quantize_row(type, values.data() + r * k, s.bytes.data() + r * row_bytes, k);
  s.w = WeightMatrix{type, s.bytes.data(), k, m, row_bytes, /*packed=*/{}, /*copy=*/{}};
  return s;
}

// matmul(table, packed) for activations x [n_tokens, k] against the scalar dot, row by row and token by
// token, on the stored rows: bit for bit. Returns how many elements were compared.
int expect_scalar_bits(const DotKernels& table, const WeightMatrix& stored, const WeightMatrix& packed,
                       const std::vector<float>& x, int64_t n_tokens, const std::string& what) {
  const int64_t m = stored.n_rows, k = stored.n_cols;
  std::vector<float> got(static_cast<size_t>(n_tokens * m));
  MatmulScratch scratch;
  matmul(table, packed, x.data(), n_tokens, got.data(), 2, scratch);
  MatmulScratch ref_scratch;
  const MatmulActivations a = prepare_activations(stored.type, x.data(), n_tokens, k, ref_scratch);
  int compared = 0;
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < m; ++r) {
      const float want = dot_row(scalar_dot_kernels(), stored, r, a, t);
      const float have = got[static_cast<size_t>(t * m + r)];
      EXPECT_EQ(std::memcmp(&want, &have, 4), 0) << what << " m=" << m << " k=" << k << " tokens=" << n_tokens << " t=" << t
                                                  << " r=" << r << ": " << have << " vs " << want;
      if (std::memcmp(&want, &have, 4) != 0) return compared;
      ++compared;
    }
  return compared;
}

class PackedKernels : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported on this CPU";
  }
};

TEST_P(PackedKernels, EqualTheScalarRowMajorDotBitForBit) {
  // AVX-512 has two Q8_0 kernels (packed_dot.h), one chosen by the CPU: both are checked here.
  std::vector<DotKernels> tables = {dot_kernels_for(GetParam())};
  if (GetParam() == Isa::Avx512) {
    EXPECT_EQ(tables[0].packed_q8_0 == packed_q8_0_avx512_split, cpu_splits_512bit_ops());
    tables.push_back(tables[0]);
    tables[1].packed_q8_0 = tables[0].packed_q8_0 == packed_q8_0_avx512 ? packed_q8_0_avx512_split : packed_q8_0_avx512;
  }
  int compared = 0;
  for (const DotKernels& table : tables) {
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0}) {
      for (int64_t m : {1, 16, 37}) {
        for (int64_t k : {32, 64, 96, 288, 2048}) {  // odd and even block counts (blocks are stored in pairs)
          StoredMatrix unpacked = random_matrix(type, m, k, static_cast<uint32_t>(m * 1000 + k));
          WeightMatrix packed = unpacked.w;
          pack_weights(packed, 2);
          ASSERT_TRUE(packed.packed);
          for (int64_t n_tokens = 1; n_tokens <= 33; ++n_tokens) {  // every tile of 8 and split of Q8_0's pairs
            auto x = test::normal_values(static_cast<size_t>(n_tokens * k), static_cast<uint32_t>(n_tokens + 7 * k));
            compared += expect_scalar_bits(table, unpacked.w, packed, x, n_tokens, ggml_type_name(type));
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST_P(PackedKernels, UnpackedRowsGiveTheSameResultsAsPacked) {
  // The row-major SIMD dot (used when a matrix is not packed) follows the same block order.
  const DotKernels& table = dot_kernels_for(GetParam());
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0}) {
    StoredMatrix s = random_matrix(type, 21, 160, 5);
    WeightMatrix packed = s.w;
    pack_weights(packed, 1);
    auto x = test::normal_values(5 * 160, 6);
    std::vector<float> a(5 * 21), b(5 * 21);
    MatmulScratch scratch;
    matmul(table, s.w, x.data(), 5, a.data(), 1, scratch);
    matmul(table, packed, x.data(), 5, b.data(), 1, scratch);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << ggml_type_name(type);
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, PackedKernels, testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

// Q4_K, Q5_K and Q6_K: packed only for a table with their packed kernels; then every token count 1-33
// (several tiles of kPackTokens, a last partial one) equals the scalar dot bit for bit. Half the matrices are
// random bytes (every 6-bit scale and min, every signed Q6_K scale, all-zero and all-one nibbles and
// high bits, next to activations of −128 and 127), half quantized from normal values.
StoredMatrix random_kquant_matrix(GgmlType type, int64_t m, int64_t k, uint32_t seed, bool raw_bytes) {
  if (!raw_bytes) return random_matrix(type, m, k, seed);
  StoredMatrix s;
  const size_t row_bytes = ggml_row_size(type, k);
  s.bytes.resize(row_bytes * static_cast<size_t>(m));
  std::mt19937 rng(seed);
  for (uint8_t& b : s.bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  if (type == GgmlType::Q4_K) {
    auto* blocks = reinterpret_cast<BlockQ4_K*>(s.bytes.data());
    for (size_t b = 0; b < s.bytes.size() / sizeof(BlockQ4_K); ++b) {
      blocks[b].d = f32_to_f16(scale(rng));
      blocks[b].dmin = f32_to_f16(scale(rng));
    }
  } else if (type == GgmlType::Q5_K) {
    auto* blocks = reinterpret_cast<BlockQ5_K*>(s.bytes.data());
    for (size_t b = 0; b < s.bytes.size() / sizeof(BlockQ5_K); ++b) {
      blocks[b].d = f32_to_f16(scale(rng));
      blocks[b].dmin = f32_to_f16(scale(rng));
    }
  } else {
    auto* blocks = reinterpret_cast<BlockQ6_K*>(s.bytes.data());
    for (size_t b = 0; b < s.bytes.size() / sizeof(BlockQ6_K); ++b) blocks[b].d = f32_to_f16(scale(rng));
  }
  s.w = WeightMatrix{type, s.bytes.data(), k, m, row_bytes, /*packed=*/{}, /*copy=*/{}};
  return s;
}

TEST_P(PackedKernels, KQuantsEqualTheScalarRowMajorDotBitForBit) {
  const DotKernels& table = dot_kernels_for(GetParam());
  int compared = 0;
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const bool has_kernel = packed_kquant_kernel(table, type) != nullptr;
    for (bool raw : {false, true}) {
      for (int64_t m : {1, 16, 37}) {
        for (int64_t k : {256, 512, 2304}) {
          StoredMatrix unpacked = random_kquant_matrix(type, m, k, static_cast<uint32_t>(m * 1000 + k + raw), raw);
          WeightMatrix packed = unpacked.w;
          pack_weights(packed, 2, nullptr, table);
          ASSERT_EQ(packed.packed != nullptr, has_kernel);
          for (int64_t n_tokens = 1; n_tokens <= 33; ++n_tokens) {  // every tile split of up to 33 tokens
            auto x = test::normal_values(static_cast<size_t>(n_tokens * k), static_cast<uint32_t>(n_tokens + 7 * k));
            if (raw)  // activations at the int8 extremes: Q8_K maps the largest magnitude of a block to ±127 / −128
              for (size_t i = 0; i < x.size(); i += 3) x[i] = (i / 3) % 2 ? 50.0f : -50.0f;
            compared += expect_scalar_bits(table, unpacked.w, packed, x, n_tokens,
                                           std::string(ggml_type_name(type)) + (raw ? " raw" : " quantized"));
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(PackedRows, OnlyQ4_0AndQ8_0CanBePacked) {
  std::vector<float> row(64, 1.0f);
  WeightMatrix w{GgmlType::F32, row.data(), 64, 1, 256, /*packed=*/{}, /*copy=*/{}};
  EXPECT_THROW(pack_rows(w, 1), Error);
  pack_weights(w, 1);  // a no-op for other types
  EXPECT_FALSE(w.packed);
}

}  // namespace
}  // namespace nucleus
