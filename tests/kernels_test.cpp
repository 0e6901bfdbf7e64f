// Kernels: every SIMD dot product against the scalar reference on random data (odd sizes
// included), half-precision conversions, and quantizers byte-identical to llama.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>

#include "core/fp16.h"
#include "core/rng.h"
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

// llama.cpp's ggml_vec_dot_q{4,5,6}_K_q8_K (its AVX2 kernels, native build of the version inside
// node-llama-cpp@3.21.1, 80fb11a) on the inputs below, as float bits. Every table must give exactly
// these for Q5_K and Q6_K: its reference logits follow that order, and other orders differ in the
// last bits, which can flip Q8_K ties in the tie-sensitive fidelity files (see
// model_fidelity_test.cpp). Q4_K sums each block as integers first (dot_scalar.cpp says why), so it
// must give the same bits on every table and stay within a few float roundings of llama.cpp's.
struct KQuantGolden {
  int n_blocks;
  uint32_t q4_K, q5_K, q6_K;
};
const KQuantGolden kLlamaCppKQuantDots[] = {
    {1, 0x3fb3716b, 0x3fa0ae8a, 0x3fa98dd4},
    {2, 0xc1b6f785, 0xc1b54cd6, 0xc1b2b4bf},
    {3, 0x41239e50, 0x410e3198, 0x40ffa1e0},
    {4, 0x3f1f1b40, 0xbf8168c0, 0xbfb29800},
    {1, 0x413e6578, 0x412c443e, 0x413a0c60},
    {2, 0xc1b63e0e, 0xc196d8fa, 0xc19685f6},
    {3, 0xc242fbd0, 0xc2362628, 0xc2371587},
    {4, 0xc29db395, 0xc292ef5d, 0xc28e15f4},
    {1, 0x42030854, 0x4205fa18, 0x42030552},
    {2, 0x4196cf64, 0x4177c7f0, 0x41807026},
    {3, 0xc2b765f0, 0xc2b5fefe, 0xc2b55c1b},
    {4, 0x428a2744, 0x427333d0, 0x427bfc20},
    {1, 0x41ee1860, 0x41aad5f0, 0x41b4e612},
    {2, 0x42c74d60, 0x42def4b6, 0x42e58277},
    {3, 0x4321c980, 0x43225854, 0x4324b380},
    {4, 0x428c26f5, 0x429453ac, 0x427f4ed8},
    {1, 0x42d2792d, 0x42bf72dc, 0x42c12140},
    {2, 0x41e3bb00, 0x41bebc74, 0x41f5dad0},
    {3, 0xc30fb55c, 0xc31de601, 0xc31bd09a},
    {4, 0x42d908b4, 0x42a2aa20, 0x42b4387e},
    {1, 0x4241b33c, 0x42525b6c, 0x423af161},
    {2, 0x419f4c28, 0x417c3b18, 0x419b11a4},
    {3, 0x433f5858, 0x43481052, 0x433f8b38},
    {4, 0x4364edee, 0x437a333f, 0x437929d5},
};

std::vector<float> uniform_values(int64_t n, uint64_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(2.0 * uniform_at(seed, static_cast<uint64_t>(i)) - 1.0);
  return v;
}

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(KQuantDots, MatchLlamaCppOnEveryTable) {
  double worst_q4_K = 0.0;  // |nucleus − llama.cpp| / Σ|w·x|
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!cpu_supports(isa)) continue;
    const DotKernels& k = dot_kernels_for(isa);
    for (int c = 0; c < static_cast<int>(std::size(kLlamaCppKQuantDots)); ++c) {
      const KQuantGolden& g = kLlamaCppKQuantDots[c];
      const int64_t n = kQK_K * g.n_blocks;
      const auto w = uniform_values(n, 100 + static_cast<uint64_t>(c), 1.0f);
      const auto x = uniform_values(n, 200 + static_cast<uint64_t>(c), 0.5f + static_cast<float>(c));
      std::vector<BlockQ8_K> x8(static_cast<size_t>(g.n_blocks));
      std::vector<BlockQ4_K> w4(x8.size());
      std::vector<BlockQ5_K> w5(x8.size());
      std::vector<BlockQ6_K> w6(x8.size());
      quantize_activations_q8_K(x.data(), x8.data(), n);
      quantize_row_q4_K(w.data(), w4.data(), n);
      quantize_row_q5_K(w.data(), w5.data(), n);
      quantize_row_q6_K(w.data(), w6.data(), n);
      const float q4_K = k.dot_q4_K_q8_K(w4.data(), x8.data(), g.n_blocks);
      EXPECT_EQ(float_bits(q4_K), float_bits(scalar_dot_kernels().dot_q4_K_q8_K(w4.data(), x8.data(), g.n_blocks)))
          << isa_name(isa) << " case " << c;
      std::vector<float> wd(static_cast<size_t>(n));
      dequantize_row(GgmlType::Q4_K, w4.data(), wd.data(), n);
      double magnitude = 0.0;
      for (int64_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(wd[i]) * x[i]);
      float golden;
      std::memcpy(&golden, &g.q4_K, sizeof golden);
      const double off = std::fabs(static_cast<double>(q4_K) - golden) / magnitude;
      worst_q4_K = std::max(worst_q4_K, off);
      // 2^-21 is four float roundings of the sum of magnitudes; measured: 3e-8.
      EXPECT_LE(off, std::ldexp(1.0, -21)) << isa_name(isa) << " case " << c;
      EXPECT_EQ(float_bits(k.dot_q5_K_q8_K(w5.data(), x8.data(), g.n_blocks)), g.q5_K) << isa_name(isa) << " case " << c;
      EXPECT_EQ(float_bits(k.dot_q6_K_q8_K(w6.data(), x8.data(), g.n_blocks)), g.q6_K) << isa_name(isa) << " case " << c;
    }
  }
  EXPECT_GT(worst_q4_K, 0.0);  // the orders differ: a zero would mean the inputs no longer exercise it
  char worst[32];
  std::snprintf(worst, sizeof worst, "%.3g", worst_q4_K);
  RecordProperty("worst_q4_K_relative_to_magnitude", worst);
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
  for (int64_t n : {1, 8, 15, 16, 24, 40, 257, 1037, 2048}) {
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
  // Batch invariance at the kernel level: y[t] computed among 13 tokens (groups of 7 and 6; of 5, 5
  // and 3 for F16) equals y[t] alone. 100 rows: several row tiles (run in parallel), a partial last tile
  // and partial F16/BF16 register tiles.
  const int64_t k = 256, m = 100, n_tokens = 13;
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K,
                        GgmlType::Q5_K, GgmlType::Q6_K}) {
    auto w = random_vector(static_cast<size_t>(k * m), 11);
    std::vector<uint8_t> stored(ggml_row_size(type, k) * m);
    for (int64_t r = 0; r < m; ++r) quantize_row(type, w.data() + r * k, stored.data() + r * ggml_row_size(type, k), k);
    WeightMatrix matrix{type, stored.data(), k, m, ggml_row_size(type, k), /*packed=*/{}, /*copy=*/{}};
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
  WeightMatrix matrix{GgmlType::F16, stored->data(), k, m, ggml_row_size(GgmlType::F16, k), /*packed=*/{}, /*copy=*/{}};
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
  WeightMatrix little{GgmlType::F16, small.data(), k, 4, ggml_row_size(GgmlType::F16, k), /*packed=*/{}, /*copy=*/{}};
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
