// Kernels: every SIMD dot product against the scalar reference on random data (odd sizes
// included), half-precision conversions, and quantizers byte-identical to llama.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "core/fp16.h"
#include "core/weight_memory.h"
#include "io/gguf.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "kernels/quantize_k.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(HalfPrecision, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(HalfPrecision, F16RoundsToNearestEven) {
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 1.0f / 2048.0f)), 1.0f);               // tie → even (down)
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 3.0f / 2048.0f)), 1.0f + 2.0f / 1024.0f);  // tie → even (up)
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                                      // overflow → inf
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));                          // smallest subnormal
}

TEST(HalfPrecision, Bf16RoundTrip) {
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_bf16(f), h);
  }
}

class SimdDot : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  }
};

TEST_P(SimdDot, FloatFormatsMatchScalar) {
  const DotKernels& simd = dot_kernels_for(GetParam());
  const DotKernels& ref = scalar_dot_kernels();
  for (int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 64, 100, 257, 1000}) {
    auto w = random_vector(static_cast<size_t>(n), 1 + static_cast<uint32_t>(n));
    auto x = random_vector(static_cast<size_t>(n), 1000 + static_cast<uint32_t>(n));
    std::vector<uint16_t> w16(w.size()), wb16(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      w16[i] = f32_to_f16(w[i]);
      wb16[i] = f32_to_bf16(w[i]);
    }
    const float tol = 1e-4f * static_cast<float>(n);
    EXPECT_NEAR(simd.dot_f32(w.data(), x.data(), n), ref.dot_f32(w.data(), x.data(), n), tol) << n;
    EXPECT_NEAR(simd.dot_f16_f32(w16.data(), x.data(), n), ref.dot_f16_f32(w16.data(), x.data(), n), tol) << n;
    EXPECT_NEAR(simd.dot_bf16_f32(wb16.data(), x.data(), n), ref.dot_bf16_f32(wb16.data(), x.data(), n), tol) << n;
  }
}

TEST_P(SimdDot, IntegerFormatsMatchScalar) {
  const DotKernels& simd = dot_kernels_for(GetParam());
  const DotKernels& ref = scalar_dot_kernels();
  for (int64_t n_blocks : {1, 2, 3, 5, 8, 33}) {
    const int64_t n = n_blocks * 32;
    auto w = random_vector(static_cast<size_t>(n), 7 + static_cast<uint32_t>(n));
    auto x = random_vector(static_cast<size_t>(n), 70 + static_cast<uint32_t>(n));
    std::vector<BlockQ8_0> w8(static_cast<size_t>(n_blocks)), x8(static_cast<size_t>(n_blocks));
    std::vector<BlockQ4_0> w4(static_cast<size_t>(n_blocks));
    quantize_row_q8_0(w.data(), w8.data(), n);
    quantize_row_q4_0(w.data(), w4.data(), n);
    quantize_activations_q8_0(x.data(), x8.data(), n);
    // Exact integer sums and the same lane-wise float steps: bit-identical to the reference.
    EXPECT_EQ(simd.dot_q8_0_q8_0(w8.data(), x8.data(), n_blocks), ref.dot_q8_0_q8_0(w8.data(), x8.data(), n_blocks));
    EXPECT_EQ(simd.dot_q4_0_q8_0(w4.data(), x8.data(), n_blocks), ref.dot_q4_0_q8_0(w4.data(), x8.data(), n_blocks));
  }
}

TEST_P(SimdDot, KQuantFormatsMatchScalar) {
  const DotKernels& simd = dot_kernels_for(GetParam());
  const DotKernels& ref = scalar_dot_kernels();
  for (int64_t n_blocks : {1, 2, 3, 7}) {
    const int64_t n = n_blocks * kQK_K;
    auto w = random_vector(static_cast<size_t>(n), 17 + static_cast<uint32_t>(n));
    auto x = random_vector(static_cast<size_t>(n), 170 + static_cast<uint32_t>(n));
    std::vector<BlockQ4_K> w4(static_cast<size_t>(n_blocks));
    std::vector<BlockQ5_K> w5(static_cast<size_t>(n_blocks));
    std::vector<BlockQ6_K> w6(static_cast<size_t>(n_blocks));
    std::vector<BlockQ8_K> x8(static_cast<size_t>(n_blocks));
    quantize_row_q4_K(w.data(), w4.data(), n);
    quantize_row_q5_K(w.data(), w5.data(), n);
    quantize_row_q6_K(w.data(), w6.data(), n);
    quantize_activations_q8_K(x.data(), x8.data(), n);
    // Exact integer sums and the same float steps per block: bit-identical to the reference.
    EXPECT_EQ(simd.dot_q4_K_q8_K(w4.data(), x8.data(), n_blocks), ref.dot_q4_K_q8_K(w4.data(), x8.data(), n_blocks));
    EXPECT_EQ(simd.dot_q5_K_q8_K(w5.data(), x8.data(), n_blocks), ref.dot_q5_K_q8_K(w5.data(), x8.data(), n_blocks));
    EXPECT_EQ(simd.dot_q6_K_q8_K(w6.data(), x8.data(), n_blocks), ref.dot_q6_K_q8_K(w6.data(), x8.data(), n_blocks));
    // And the quantized dot approximates the float dot.
    std::vector<float> wd(static_cast<size_t>(n));
    double exact = 0;
    dequantize_row(GgmlType::Q6_K, w6.data(), wd.data(), n);
    for (int64_t i = 0; i < n; ++i) exact += static_cast<double>(wd[i]) * x[i];
    EXPECT_NEAR(ref.dot_q6_K_q8_K(w6.data(), x8.data(), n_blocks), exact, 0.02 * std::sqrt(static_cast<double>(n)));
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, SimdDot, testing::Values(Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

TEST(Quantize, KQuantsRoundTripWithinTheirResolution) {
  auto x = random_vector(4 * kQK_K, 5);
  std::vector<float> back(x.size());
  std::vector<uint8_t> buffer(ggml_row_size(GgmlType::Q6_K, static_cast<int64_t>(x.size())));  // the largest of the three
  // Max error relative to the block's range: 4 bits ≈ 1/15, 5 bits ≈ 1/31, 6 bits ≈ 1/63 (+ scale rounding).
  const std::pair<GgmlType, double> cases[] = {{GgmlType::Q4_K, 0.45}, {GgmlType::Q5_K, 0.25}, {GgmlType::Q6_K, 0.12}};
  for (const auto& [type, tolerance] : cases) {
    quantize_row(type, x.data(), buffer.data(), static_cast<int64_t>(x.size()));
    dequantize_row(type, buffer.data(), back.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(back[i] - x[i])));
    EXPECT_LT(worst, tolerance) << ggml_type_name(type);
    EXPECT_GT(worst, 0.0) << ggml_type_name(type);
  }
}

TEST(Quantize, DequantizedValuesAreCloseToTheInput) {
  auto x = random_vector(256, 3);
  std::vector<float> back(256);
  std::vector<BlockQ8_0> q8(8);
  std::vector<BlockQ4_0> q4(8);
  quantize_row_q8_0(x.data(), q8.data(), 256);
  dequantize_row(GgmlType::Q8_0, q8.data(), back.data(), 256);
  for (size_t i = 0; i < 256; ++i) EXPECT_NEAR(back[i], x[i], 0.03);
  quantize_row_q4_0(x.data(), q4.data(), 256);
  dequantize_row(GgmlType::Q4_0, q4.data(), back.data(), 256);
  for (size_t i = 0; i < 256; ++i) EXPECT_NEAR(back[i], x[i], 0.5);
}

// llama.cpp quantized llama-spm-f16.gguf into the q8_0 / q4_0 files with --pure: quantizing
// the same f16 tensors with our reference quantizers must give the very same bytes.
void expect_quantization_matches(const std::string& quantized_file, GgmlType type) {
  NUCLEUS_REQUIRE_SHARED();
  auto source = GgufFile::open(test::shared_path("models/test/llama-spm-f16.gguf"));
  auto expected = GgufFile::open(test::shared_path("models/test/" + quantized_file));
  int compared = 0;
  for (const TensorInfo& t : expected->tensors()) {
    if (t.type != type) continue;
    const TensorInfo* src = source->find_tensor(t.name);
    ASSERT_NE(src, nullptr) << t.name;
    std::vector<float> f32(static_cast<size_t>(src->n_elements()));
    dequantize_row(src->type, src->data, f32.data(), src->n_elements());
    std::vector<uint8_t> bytes(t.nbytes);
    quantize_row(type, f32.data(), bytes.data(), src->n_elements());
    EXPECT_EQ(std::memcmp(bytes.data(), t.data, t.nbytes), 0) << t.name;
    ++compared;
  }
  EXPECT_GT(compared, 10);
}

TEST(Quantize, Q8_0IsByteIdenticalToLlamaCpp) { expect_quantization_matches("llama-spm-q8_0.gguf", GgmlType::Q8_0); }
TEST(Quantize, Q4_0IsByteIdenticalToLlamaCpp) { expect_quantization_matches("llama-spm-q4_0.gguf", GgmlType::Q4_0); }

TEST_P(SimdDot, MultiTokenF16DotEqualsSingleCallsBitForBit) {
  const DotKernels& simd = dot_kernels_for(GetParam());
  ASSERT_TRUE(simd.dotn_f16_f32 != nullptr) << isa_name(GetParam()) << " has no multi-token f16 dot";
  for (int64_t n : {1, 8, 15, 16, 40, 257, 2048}) {
    auto w = random_vector(static_cast<size_t>(n), 3 + static_cast<uint32_t>(n));
    std::vector<uint16_t> w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w16[i] = f32_to_f16(w[i]);
    auto xs = random_vector(static_cast<size_t>(n * kDotTokens), 300 + static_cast<uint32_t>(n));
    const float* x[kDotTokens];
    for (int j = 0; j < kDotTokens; ++j) x[j] = xs.data() + j * n;
    for (int tokens = 1; tokens <= kDotTokens; ++tokens) {
      float out[kDotTokens];
      simd.dotn_f16_f32(w16.data(), x, tokens, n, out);
      for (int j = 0; j < tokens; ++j) {
        const float single = simd.dot_f16_f32(w16.data(), x[j], n);
        EXPECT_EQ(std::memcmp(&out[j], &single, sizeof(float)), 0) << "n " << n << ", " << tokens << " tokens, token " << j;
      }
    }
  }
}

TEST(F16Tiles, EveryRowAndTokenEqualsTheSingleDotBitForBit) {
  // The register-blocked tile must give each (row, token) exactly dot_f16_f32, for every token
  // count, every partial row count and lengths with 8-wide and scalar tails.
  if (!cpu_supports(Isa::Avx512)) GTEST_SKIP() << "this CPU has no AVX-512 (the tile is AVX-512 only)";
  const DotKernels& simd = dot_kernels_for(Isa::Avx512);
  ASSERT_TRUE(simd.tile_f16_f32 != nullptr);
  for (int64_t n : {1, 8, 15, 16, 24, 40, 257, 2048}) {
    std::vector<std::vector<uint16_t>> rows(kMaxF16TileRows);
    const uint16_t* w[kMaxF16TileRows];
    for (int r = 0; r < kMaxF16TileRows; ++r) {
      auto f = random_vector(static_cast<size_t>(n), 40 + static_cast<uint32_t>(r * 1000 + n));
      for (float v : f) rows[r].push_back(f32_to_f16(v));
      w[r] = rows[r].data();
    }
    auto xs = random_vector(static_cast<size_t>(n * kDotTokens), 700 + static_cast<uint32_t>(n));
    const float* x[kDotTokens];
    for (int j = 0; j < kDotTokens; ++j) x[j] = xs.data() + j * n;
    for (int tokens = 1; tokens <= kDotTokens; ++tokens) {
      for (int n_rows = 1; n_rows <= f16_tile_rows(tokens); ++n_rows) {
        float out[kMaxF16TileRows * kDotTokens];
        std::fill(std::begin(out), std::end(out), -1.0f);
        simd.tile_f16_f32(w, n_rows, w, x, tokens, n, out);
        for (int r = 0; r < n_rows; ++r)
          for (int j = 0; j < tokens; ++j) {
            const float single = simd.dot_f16_f32(w[r], x[j], n);
            EXPECT_EQ(std::memcmp(&out[r * kDotTokens + j], &single, sizeof(float)), 0)
                << "n " << n << ", " << tokens << " tokens, " << n_rows << " rows, row " << r << ", token " << j;
          }
      }
    }
  }
}

TEST_P(SimdDot, MultiTokenKQuantDotsEqualSingleCallsBitForBit) {
  const DotKernels& simd = dot_kernels_for(GetParam());
  ASSERT_TRUE(simd.dotn_q4_K_q8_K != nullptr && simd.dotn_q6_K_q8_K != nullptr)
      << isa_name(GetParam()) << " has no multi-token K-quant dot";
  for (int64_t n_blocks : {1, 3, 8}) {
    const int64_t n = n_blocks * kQK_K;
    auto w = random_vector(static_cast<size_t>(n), 21 + static_cast<uint32_t>(n));
    std::vector<BlockQ4_K> w4(static_cast<size_t>(n_blocks));
    std::vector<BlockQ6_K> w6(static_cast<size_t>(n_blocks));
    quantize_row(GgmlType::Q4_K, w.data(), w4.data(), n);
    quantize_row(GgmlType::Q6_K, w.data(), w6.data(), n);
    std::vector<BlockQ8_K> xs(static_cast<size_t>(n_blocks * kDotTokens));
    const BlockQ8_K* x[kDotTokens];
    for (int j = 0; j < kDotTokens; ++j) {
      auto xf = random_vector(static_cast<size_t>(n), 500 + static_cast<uint32_t>(j));
      quantize_activations_q8_K(xf.data(), xs.data() + j * n_blocks, n);
      x[j] = xs.data() + j * n_blocks;
    }
    for (int tokens = 1; tokens <= kDotTokens; ++tokens) {
      float out4[kDotTokens], out6[kDotTokens];
      simd.dotn_q4_K_q8_K(w4.data(), x, tokens, n_blocks, out4);
      simd.dotn_q6_K_q8_K(w6.data(), x, tokens, n_blocks, out6);
      for (int j = 0; j < tokens; ++j) {
        const float single4 = simd.dot_q4_K_q8_K(w4.data(), x[j], n_blocks);
        const float single6 = simd.dot_q6_K_q8_K(w6.data(), x[j], n_blocks);
        EXPECT_EQ(std::memcmp(&out4[j], &single4, sizeof(float)), 0) << "Q4_K, " << tokens << " tokens, token " << j;
        EXPECT_EQ(std::memcmp(&out6[j], &single6, sizeof(float)), 0) << "Q6_K, " << tokens << " tokens, token " << j;
      }
    }
  }
}

TEST(Matmul, RowsAreIndependentOfTheNumberOfTokens) {
  // Batch invariance at the kernel level: y[t] computed among 13 tokens (a group of 8, then 5)
  // equals y[t] alone. 100 rows: several row tiles (run in parallel), a partial last tile and
  // partial F16 register tiles.
  const int64_t k = 256, m = 100, n_tokens = 13;
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K,
                        GgmlType::Q5_K, GgmlType::Q6_K}) {
    auto w = random_vector(static_cast<size_t>(k * m), 11);
    std::vector<uint8_t> stored(ggml_row_size(type, k) * m);
    for (int64_t r = 0; r < m; ++r) quantize_row(type, w.data() + r * k, stored.data() + r * ggml_row_size(type, k), k);
    WeightMatrix matrix{type, stored.data(), k, m, ggml_row_size(type, k)};
    auto x = random_vector(static_cast<size_t>(n_tokens * k), 12);
    std::vector<float> batched(static_cast<size_t>(n_tokens * m)), alone(static_cast<size_t>(m));
    MatmulScratch scratch;
    matmul(select_dot_kernels(), matrix, x.data(), n_tokens, batched.data(), 2, scratch);
    for (int64_t t = 0; t < n_tokens; ++t) {
      matmul(select_dot_kernels(), matrix, x.data() + t * k, 1, alone.data(), 1, scratch);
      EXPECT_EQ(std::memcmp(alone.data(), batched.data() + t * m, static_cast<size_t>(m) * 4), 0) << ggml_type_name(type);
    }
  }
}

TEST(WeightMemory, LargeMatricesMoveToAlignedCopiesThatMultiplyTheSame) {
  // copy_to_weight_memory: a matrix of at least kMinHugeWeightBytes moves to a 2 MiB-aligned copy
  // (huge pages) holding the same bytes and giving bit-identical products; the copy outlives the
  // original storage; a small matrix stays where it is.
  const int64_t k = 2048, m = static_cast<int64_t>(kMinHugeWeightBytes / (2 * 2048)) + 3;  // F16: just over
  auto w = random_vector(static_cast<size_t>(k * m), 21);
  auto stored = std::make_unique<std::vector<uint8_t>>(ggml_row_size(GgmlType::F16, k) * m);
  for (int64_t r = 0; r < m; ++r) quantize_row(GgmlType::F16, w.data() + r * k, stored->data() + r * 2 * k, k);
  WeightMatrix matrix{GgmlType::F16, stored->data(), k, m, ggml_row_size(GgmlType::F16, k)};
  auto x = random_vector(static_cast<size_t>(5 * k), 22);
  std::vector<float> before(static_cast<size_t>(5 * m)), after(before.size());
  MatmulScratch scratch;
  matmul(select_dot_kernels(), matrix, x.data(), 5, before.data(), 2, scratch);

  ASSERT_TRUE(copy_to_weight_memory(matrix));
  EXPECT_NE(matrix.data, static_cast<const void*>(stored->data()));
  EXPECT_EQ(matrix.data, static_cast<const void*>(matrix.copy.get()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(matrix.data) % kHugePageBytes, 0u);
  EXPECT_EQ(std::memcmp(matrix.data, stored->data(), stored->size()), 0);
  stored.reset();  // the file's bytes go away; the copy is what matmul reads
  matmul(select_dot_kernels(), matrix, x.data(), 5, after.data(), 2, scratch);
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0);

  std::vector<uint8_t> small(ggml_row_size(GgmlType::F16, k) * 4);
  WeightMatrix little{GgmlType::F16, small.data(), k, 4, ggml_row_size(GgmlType::F16, k)};
  EXPECT_FALSE(copy_to_weight_memory(little));
  EXPECT_EQ(little.data, static_cast<const void*>(small.data()));
  EXPECT_EQ(little.copy, nullptr);
}

TEST(Ops, RopeRotatesPairsInBothLayouts) {
  std::vector<float> x = {1, 0, 0, 1};
  rope(x.data(), 4, 0, 10000.0f, false);
  EXPECT_EQ(x, (std::vector<float>{1, 0, 0, 1}));  // position 0 is the identity
  std::vector<float> normal = {1, 0, 1, 0};
  rope(normal.data(), 4, 1, 10000.0f, false);  // pair (0,1) angle 1; pair (2,3) angle 0.01
  EXPECT_NEAR(normal[0], std::cos(1.0f), 1e-6);
  EXPECT_NEAR(normal[1], std::sin(1.0f), 1e-6);
  EXPECT_NEAR(normal[2], std::cos(0.01f), 1e-6);
  std::vector<float> neox = {1, 1, 0, 0};
  rope(neox.data(), 4, 1, 10000.0f, true);  // pairs (0,2) and (1,3)
  EXPECT_NEAR(neox[0], std::cos(1.0f), 1e-6);
  EXPECT_NEAR(neox[2], std::sin(1.0f), 1e-6);
  EXPECT_NEAR(neox[3], std::sin(0.01f), 1e-6);
}

TEST(Ops, RmsNormAndSoftmax) {
  std::vector<float> x = {3, 4}, w = {1, 2}, out(2);
  rms_norm(x.data(), w.data(), out.data(), 2, 0.0f);
  const float rms = std::sqrt(12.5f);
  EXPECT_NEAR(out[0], 3 / rms, 1e-6);
  EXPECT_NEAR(out[1], 8 / rms, 1e-6);
  std::vector<float> s = {0, std::log(3.0f)};
  softmax(s.data(), 2);
  EXPECT_NEAR(s[0], 0.25, 1e-6);
  EXPECT_NEAR(s[1], 0.75, 1e-6);
}

}  // namespace
}  // namespace nucleus
