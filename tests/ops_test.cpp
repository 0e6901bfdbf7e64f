// Operators: every SIMD table against the scalar reference on random data (odd sizes included) —
// bit for bit where the kernels are built to be identical (rope, add, head grouping in attention),
// within a few ulp where the vector exp or the summation order differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "core/fp16.h"
#include "kernels/ops.h"
#include "kernels/rope_table.h"

namespace nucleus {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Distance in representable floats (same sign assumed; both finite).
int64_t ulp_distance(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
  };
  return std::llabs(key(a) - key(b));
}

const int64_t kSizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 257, 2048, 2051};

TEST(ScalarOps, RopeTableRowsRotateExactlyLikeRope) {
  for (bool neox : {false, true}) {
    for (float base : {10000.0f, 1000000.0f}) {
      const int64_t head_dim = 64, n_rot = 64, n_heads = 2;
      std::vector<int32_t> positions = {0, 1, 2, 17, 511, 4095, 32767};
      RopeTable table;
      table.build(positions.data(), static_cast<int64_t>(positions.size()), n_rot, base, neox);
      for (size_t t = 0; t < positions.size(); ++t) {
        std::vector<float> x = random_vector(n_heads * head_dim, static_cast<uint32_t>(t)), expected = x;
        for (int64_t h = 0; h < n_heads; ++h) rope(expected.data() + h * head_dim, n_rot, positions[t], base, neox);
        scalar_ops_kernels().rope(x.data(), n_heads, head_dim, table.row(static_cast<int64_t>(t)), n_rot, neox);
        EXPECT_EQ(x, expected) << "neox " << neox << " base " << base << " position " << positions[t];
      }
    }
  }
}

class SimdOps : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  }
  const OpsKernels& simd() const { return ops_kernels_for(GetParam()); }
  const OpsKernels& scalar() const { return scalar_ops_kernels(); }
};

TEST_P(SimdOps, ExpIsWithinOneUlpOfStdExp) {
  std::vector<float> x;
  for (float v = -104.0f; v <= 89.0f; v += 0.0037f) x.push_back(v);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> small(-1.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) x.push_back(small(rng));
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 88.7f, 88.72f, -87.33f, -87.34f, -100.0f, -103.9f, 1e-8f, -1e-8f})
    x.push_back(v);
  std::vector<float> got(x.size());
  simd().exp(x.data(), got.data(), static_cast<int64_t>(x.size()));
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float expected = std::exp(x[i]);
    const int64_t d = std::isinf(expected) ? (std::isinf(got[i]) ? 0 : 99) : ulp_distance(got[i], expected);
    worst = std::max(worst, d);
    ASSERT_LE(d, 1) << "exp(" << x[i] << ") = " << got[i] << ", std::exp gives " << expected;
  }
  RecordProperty("worst_ulp", std::to_string(worst));
  // Beyond the clamps: exact limits; NaN stays NaN.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> edge = {-inf, -1000.0f, 89.0f, 1000.0f, inf, std::nanf("")}, out(edge.size());
  simd().exp(edge.data(), out.data(), static_cast<int64_t>(edge.size()));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], inf);
  EXPECT_EQ(out[3], inf);
  EXPECT_EQ(out[4], inf);
  EXPECT_TRUE(std::isnan(out[5]));
}

TEST_P(SimdOps, RmsNormMatchesScalar) {
  for (int64_t n : kSizes) {
    const auto x = random_vector(n, 1, 3.0f), w = random_vector(n, 2);
    std::vector<float> expected(n), got(n);
    scalar().rms_norm(x.data(), w.data(), expected.data(), n, 1e-5f);
    simd().rms_norm(x.data(), w.data(), got.data(), n, 1e-5f);
    for (int64_t i = 0; i < n; ++i) EXPECT_LE(ulp_distance(got[i], expected[i]), 2) << "n " << n << " i " << i;
    std::vector<float> in_place = x;  // out may alias x
    simd().rms_norm(in_place.data(), w.data(), in_place.data(), n, 1e-5f);
    EXPECT_EQ(in_place, got);
  }
}

TEST_P(SimdOps, RopeIsBitIdenticalToScalar) {
  std::vector<int32_t> positions = {0, 3, 100, 2047};
  for (bool neox : {false, true}) {
    for (int64_t head_dim : {8, 12, 64, 80, 128}) {
      for (int64_t n_rot : {head_dim, head_dim / 2 - (head_dim / 2) % 2, int64_t{2}}) {
        RopeTable table;
        table.build(positions.data(), static_cast<int64_t>(positions.size()), n_rot, 10000.0f, neox);
        for (size_t t = 0; t < positions.size(); ++t) {
          std::vector<float> expected = random_vector(3 * head_dim, static_cast<uint32_t>(head_dim + t)), got = expected;
          scalar().rope(expected.data(), 3, head_dim, table.row(static_cast<int64_t>(t)), n_rot, neox);
          simd().rope(got.data(), 3, head_dim, table.row(static_cast<int64_t>(t)), n_rot, neox);
          EXPECT_EQ(got, expected) << "neox " << neox << " head_dim " << head_dim << " n_rot " << n_rot;
        }
      }
    }
  }
}

TEST_P(SimdOps, SoftmaxMatchesScalar) {
  for (int64_t n : kSizes) {
    const auto x = random_vector(n, 3, 4.0f);
    std::vector<float> expected = x, got = x;
    scalar().softmax(expected.data(), n);
    simd().softmax(got.data(), n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(got[i], expected[i], 1e-5f * expected[i] + 1e-12f) << "n " << n << " i " << i;
      sum += got[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  std::vector<float> peaked = {-1000.0f, 0.0f, -1000.0f};  // exp underflows to exactly 0
  simd().softmax(peaked.data(), 3);
  EXPECT_EQ(peaked, (std::vector<float>{0.0f, 1.0f, 0.0f}));
}

// Both follow ggml_order.h (llama.cpp's exp over chunks of 16, the library exp after): same bits.
TEST_P(SimdOps, SwigluIsBitIdenticalToScalar) {
  for (int64_t n : kSizes) {
    const auto gate = random_vector(n, 4, 6.0f), up = random_vector(n, 5);
    std::vector<float> expected(n), got = gate;
    scalar().swiglu(gate.data(), up.data(), expected.data(), n);
    simd().swiglu(got.data(), up.data(), got.data(), n);  // out aliases gate, as in the forward pass
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got[i], expected[i]) << "n " << n << " g " << gate[i];
  }
  std::vector<float> extreme = {-200.0f, 200.0f, 0.0f}, ones = {1, 1, 1}, out(3);
  simd().swiglu(extreme.data(), ones.data(), out.data(), 3);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 200.0f);
  EXPECT_EQ(out[2], 0.0f);
}

TEST_P(SimdOps, AddIsBitIdenticalToScalar) {
  for (int64_t n : kSizes) {
    const auto x = random_vector(n, 6);
    std::vector<float> expected = random_vector(n, 7), got = expected;
    scalar().add(expected.data(), x.data(), n);
    simd().add(got.data(), x.data(), n);
    EXPECT_EQ(got, expected) << "n " << n;
  }
}

// A block pool with the sequence's blocks scattered in it, as the paged cache leaves them.
struct AttentionFixture {
  int64_t head_dim, n_kv_head, n_q, n_positions, block_size = 16;
  std::vector<float> keys, values, q;  // pools [num_blocks, block_size, kv_dim]; q [n_kv_head · n_q, head_dim]
  std::vector<int32_t> block_table;
  bool f16 = false;                          // read keys16 / values16 through attention_f16
  std::vector<uint16_t> keys16, values16;    // the pools rounded to f16 (as the forward pass stores them)
  int64_t first_position = 0;                // > 0: a sliding window
  float softcap = 0.0f;                      // > 0: Gemma 2's soft-capped scores

  AttentionFixture(int64_t head_dim_, int64_t n_kv_head_, int64_t n_q_, int64_t n_positions_, uint32_t seed)
      : head_dim(head_dim_), n_kv_head(n_kv_head_), n_q(n_q_), n_positions(n_positions_) {
    const int64_t n_blocks = (n_positions + block_size - 1) / block_size, num_blocks = 2 * n_blocks + 1;
    keys = random_vector(num_blocks * block_size * kv_dim(), seed);
    values = random_vector(keys.size(), seed + 1);
    q = random_vector(n_kv_head * n_q * head_dim, seed + 2, 0.5f);
    for (int32_t b = 0; b < n_blocks; ++b) block_table.push_back(static_cast<int32_t>(num_blocks - 1 - 2 * b));
    for (float k : keys) keys16.push_back(f32_to_f16(k));
    for (float v : values) values16.push_back(f32_to_f16(v));
  }
  // The same fixture reading the f16 pools.
  AttentionFixture as_f16() const {
    AttentionFixture f = *this;
    f.f16 = true;
    return f;
  }
  // The same fixture reading f32 pools that hold the f16 values widened exactly.
  AttentionFixture widened() const {
    AttentionFixture f = *this;
    for (size_t i = 0; i < keys16.size(); ++i) f.keys[i] = f16_to_f32(keys16[i]);
    for (size_t i = 0; i < values16.size(); ++i) f.values[i] = f16_to_f32(values16[i]);
    return f;
  }
  int64_t kv_dim() const { return n_kv_head * head_dim; }

  // Heads [first, first + count) of KV head kv_head, written into out [n_kv_head · n_q, head_dim].
  void run(const OpsKernels& ops, int64_t kv_head, int64_t first, int64_t count, std::vector<float>& out) const {
    std::vector<float> scores(count * (n_positions - first_position));
    AttentionArgs a;
    a.q = q.data() + (kv_head * n_q + first) * head_dim;
    a.out = out.data() + (kv_head * n_q + first) * head_dim;
    a.n_q = count;
    a.head_dim = head_dim;
    if (f16) {
      a.keys_f16 = keys16.data() + kv_head * head_dim;
      a.values_f16 = values16.data() + kv_head * head_dim;
    } else {
      a.keys = keys.data() + kv_head * head_dim;
      a.values = values.data() + kv_head * head_dim;
    }
    a.row_stride = kv_dim();  // a pool of whole rows (attention.h)
    a.block_stride = block_size * kv_dim();
    a.block_table = block_table.data();
    a.block_size = block_size;
    a.n_positions = n_positions;
    a.first_position = first_position;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.softcap = softcap;
    a.scores = scores.data();
    (f16 ? ops.attention_f16 : ops.attention)(a);
  }
  std::vector<float> run_grouped(const OpsKernels& ops) const {
    std::vector<float> out(q.size());
    for (int64_t g = 0; g < n_kv_head; ++g) run(ops, g, 0, n_q, out);
    return out;
  }
  std::vector<float> run_one_head_at_a_time(const OpsKernels& ops) const {
    std::vector<float> out(q.size());
    for (int64_t g = 0; g < n_kv_head; ++g)
      for (int64_t h = 0; h < n_q; ++h) run(ops, g, h, 1, out);
    return out;
  }
};

// Every table computes scores, softmax and the weighted values in llama.cpp's order
// (ggml_order.h), so they agree bit for bit, tails of head_dim and of positions included.
TEST_P(SimdOps, AttentionIsBitIdenticalToScalar) {
  for (int64_t head_dim : {8, 12, 64, 80, 128, 136}) {
    for (int64_t n_positions : {1, 5, 16, 17, 40, 64, 65, 130}) {
      const AttentionFixture f(head_dim, 2, 4, n_positions, static_cast<uint32_t>(head_dim * 1000 + n_positions));
      const auto expected = f.run_grouped(scalar()), got = f.run_grouped(simd());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], expected[i]) << "head_dim " << head_dim << " positions " << n_positions << " i " << i;
    }
  }
}

// Sliding windows starting off any 16- or 64-position boundary, soft-capped scores and head sizes
// up to 256 (several 64-lane steps per score), f32 and f16 pools: still bit for bit.
TEST_P(SimdOps, AttentionWindowsAndSoftcapAreBitIdenticalToScalar) {
  for (int64_t head_dim : {64, 96, 128, 256}) {
    for (int64_t n_positions : {16, 47, 100, 161}) {
      for (int64_t first : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{33}}) {
        if (first >= n_positions) continue;
        for (float softcap : {0.0f, 30.0f}) {
          for (bool f16 : {false, true}) {
            AttentionFixture f(head_dim, 1, 3, n_positions, static_cast<uint32_t>(head_dim + 7 * n_positions + first));
            f.first_position = first, f.softcap = softcap;
            if (f16) f = f.as_f16();
            const auto expected = f.run_grouped(scalar()), got = f.run_grouped(simd());
            for (size_t i = 0; i < got.size(); ++i)
              ASSERT_EQ(got[i], expected[i]) << "head_dim " << head_dim << " positions " << n_positions << " first " << first
                                             << " softcap " << softcap << " f16 " << f16 << " i " << i;
          }
        }
      }
    }
  }
}

// f16 KV: the SIMD tables against the scalar f16 reference, bit for bit as for f32.
TEST_P(SimdOps, AttentionF16IsBitIdenticalToScalar) {
  for (int64_t head_dim : {8, 12, 64, 80, 128, 136}) {
    for (int64_t n_positions : {1, 5, 16, 17, 40, 64, 65, 130}) {
      const AttentionFixture f = AttentionFixture(head_dim, 2, 4, n_positions, static_cast<uint32_t>(head_dim * 1000 + n_positions)).as_f16();
      const auto expected = f.run_grouped(scalar()), got = f.run_grouped(simd());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], expected[i]) << "head_dim " << head_dim << " positions " << n_positions << " i " << i;
    }
  }
}

// llama.cpp's rms_norm, written out: each square rounded to f32, the squares summed in f64 in
// order, the mean rounded to f32, then x · scale · w.
std::vector<float> llama_cpp_rms_norm(const std::vector<float>& x, const std::vector<float>& w, float eps) {
  double sum = 0.0;
  for (float v : x) sum += static_cast<double>(v * v);
  const float mean = static_cast<float>(sum / static_cast<double>(x.size()));
  const float scale = 1.0f / std::sqrt(mean + eps);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale * w[i];
  return out;
}

// Rows shaped like a dequantized Q4_0 embedding row (d·q, d with 11 significant bits like an f16,
// q in -8..7), kept only where rounding the squares to f32 changes the scale against exact f64
// squares. On such rows a Q8_0 activation quantizer sits exactly on ±63.5 ties, so that one ulp of
// scale flipped quants and cost up to 4.7e-2 in logits against llama.cpp (llama-spm-q4_0).
std::vector<std::vector<float>> rows_where_square_rounding_shows(int64_t n, size_t count) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> mantissa(1024, 2047), quant(-8, 7);
  std::vector<std::vector<float>> rows;
  for (int attempt = 0; attempt < 100000 && rows.size() < count; ++attempt) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t b = 0; b < n; b += 32) {
      const float d = std::ldexp(static_cast<float>(mantissa(rng)), -16) * (rng() & 1 ? 1.0f : -1.0f);
      for (int64_t j = b; j < std::min(n, b + 32); ++j) x[static_cast<size_t>(j)] = d * static_cast<float>(quant(rng));
    }
    double exact = 0.0;
    for (float v : x) exact += static_cast<double>(v) * v;
    const std::vector<float> ones(x.size(), 1.0f);
    const float exact_scale = 1.0f / std::sqrt(static_cast<float>(exact / static_cast<double>(n)) + 1e-5f);
    if (llama_cpp_rms_norm(x, ones, 1e-5f)[0] != x[0] * exact_scale) rows.push_back(std::move(x));
  }
  return rows;
}

TEST(RmsNorm, RoundsEachSquareToF32LikeLlamaCpp) {
  for (int64_t n : {128, 4096}) {
    const auto rows = rows_where_square_rounding_shows(n, 20);
    ASSERT_EQ(rows.size(), 20u) << "n " << n;
    const auto w = random_vector(static_cast<size_t>(n), 3);
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      if (!cpu_supports(isa)) continue;
      for (const auto& x : rows) {
        std::vector<float> got(x.size());
        ops_kernels_for(isa).rms_norm(x.data(), w.data(), got.data(), n, 1e-5f);
        EXPECT_EQ(got, llama_cpp_rms_norm(x, w, 1e-5f)) << isa_name(isa) << " n " << n;
      }
    }
  }
}

// Grouping query heads is a loading optimization only: every head's result is bit-identical to
// computing it alone, so the forward pass may split groups to keep threads busy.
TEST(Attention, HeadGroupingDoesNotChangeAnyBit) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!cpu_supports(isa)) continue;
    const AttentionFixture f(64, 2, 8, 37, 11);
    EXPECT_EQ(f.run_grouped(ops_kernels_for(isa)), f.run_one_head_at_a_time(ops_kernels_for(isa))) << isa_name(isa);
  }
}

// An f16 cache changes only what is stored: every table's attention_f16 is bit-identical to its
// f32 attention over the widened rows (same loads, same summation order), tails included, and
// head grouping still changes no bit.
TEST(Attention, F16IsF32AttentionOverTheWidenedRowsBitForBit) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!cpu_supports(isa)) continue;
    const OpsKernels& ops = ops_kernels_for(isa);
    for (int64_t head_dim : {8, 12, 64, 80}) {
      for (int64_t n_positions : {1, 17, 130}) {
        const AttentionFixture f(head_dim, 2, 4, n_positions, static_cast<uint32_t>(head_dim * 77 + n_positions));
        EXPECT_EQ(f.as_f16().run_grouped(ops), f.widened().run_grouped(ops))
            << isa_name(isa) << " head_dim " << head_dim << " positions " << n_positions;
      }
    }
    const AttentionFixture f = AttentionFixture(64, 2, 8, 37, 11).as_f16();
    EXPECT_EQ(f.run_grouped(ops), f.run_one_head_at_a_time(ops)) << isa_name(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, SimdOps, testing::Values(Isa::Avx2, Isa::Avx512),
                         [](const testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace nucleus
