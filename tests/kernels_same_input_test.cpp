// matmul_same_input (Q, K and V; gate and up in one pass): bit for bit what one matmul per matrix
// gives, on every table, for every packed type, token counts across the pass sizes, one and two
// threads and row counts that leave partial groups — and one pass (one profiled call) where the
// types allow it, one call per matrix where they do not.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "core/fp16.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/quantize.h"
#include "kernels/step_profile.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

constexpr int64_t kCols = 2048;  // a multiple of every block (K-quants: 256)

// A [rows × kCols] matrix stored in `type`, packed as a model load packs it for `table`.
struct Matrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
  Matrix(GgmlType type, int64_t rows, uint32_t seed, const DotKernels& table) {
    const size_t row_bytes = ggml_row_size(type, kCols);
    bytes.resize(row_bytes * static_cast<size_t>(rows));
    const auto values = test::normal_values(static_cast<size_t>(rows * kCols), seed);
    for (int64_t r = 0; r < rows; ++r) quantize_row(type, values.data() + r * kCols, bytes.data() + r * row_bytes, kCols);
    w = WeightMatrix{type, bytes.data(), kCols, rows, row_bytes, /*packed=*/{}, /*copy=*/{}};
    pack_weights(w, 1, nullptr, table);
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs ws through matmul_same_input and through one matmul each; expects the same bits and returns
// how many profiled calls the joint call made.
int64_t expect_same_as_separate(const DotKernels& table, const std::vector<const Matrix*>& ms, int64_t n_tokens,
                                int n_threads, const std::string& what) {
  const auto x = test::normal_values(static_cast<size_t>(n_tokens * kCols), static_cast<uint32_t>(n_tokens * 31 + n_threads));
  std::vector<const WeightMatrix*> ws;
  std::vector<std::vector<float>> joint, separate;
  std::vector<float*> ys;
  for (const Matrix* m : ms) {
    ws.push_back(&m->w);
    joint.emplace_back(static_cast<size_t>(n_tokens * m->w.n_rows), -1.0f);
    separate.emplace_back(static_cast<size_t>(n_tokens * m->w.n_rows), -2.0f);
  }
  for (auto& y : joint) ys.push_back(y.data());
  StepProfile profile;
  MatmulScratch scratch;
  scratch.profile = &profile;
  matmul_same_input(table, ws, x.data(), n_tokens, ys, n_threads, scratch);
  MatmulScratch plain;
  for (size_t i = 0; i < ms.size(); ++i) matmul(table, ms[i]->w, x.data(), n_tokens, separate[i].data(), n_threads, plain);
  for (size_t i = 0; i < ms.size(); ++i)
    EXPECT_TRUE(same_bits(joint[i], separate[i])) << what << ": matrix " << i << ", " << n_tokens << " tokens, "
                                                  << n_threads << " threads";
  int64_t calls = 0;
  for (const auto& [type, entry] : profile.matmul) calls += entry.calls;
  return calls;
}

class SameInput : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported on this CPU";
  }
};

TEST_P(SameInput, EqualsOneMatmulPerMatrixAndIsOnePassWhereAllArePacked) {
  const DotKernels& table = dot_kernels_for(GetParam());
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F16,
                        GgmlType::BF16}) {
    // Q's rows, then K's and V's: partial groups of 16 and of 4 rows (100 = 6·16 + 4, 33 = 2·16 + 1).
    const Matrix q(type, 100, 1, table), k(type, 48, 2, table), v(type, 33, 3, table);
    const bool all_packed = q.w.packed && k.w.packed && v.w.packed;
    for (int n_threads : {1, 2})
      for (int64_t n_tokens : {1, 2, 5, 9}) {
        const std::string what = std::string(isa_name(GetParam())) + " " + ggml_type_name(type);
        const int64_t calls = expect_same_as_separate(table, {&q, &k, &v}, n_tokens, n_threads, what);
        const bool half = type == GgmlType::F16 || type == GgmlType::BF16;
        const bool one_pass = all_packed && (!half || n_tokens == 1);
        EXPECT_EQ(calls, one_pass ? 1 : 3) << what << ", " << n_tokens << " tokens, " << n_threads << " threads";
        if (HasFailure()) return;
      }
  }
}

TEST_P(SameInput, MixedTypesTakeOneMatmulEach) {
  // A Q4_K_M file's attention: Q and K in Q4_K, V in Q6_K.
  const DotKernels& table = dot_kernels_for(GetParam());
  const Matrix q(GgmlType::Q4_K, 64, 4, table), k(GgmlType::Q4_K, 16, 5, table), v(GgmlType::Q6_K, 16, 6, table);
  for (int64_t n_tokens : {1, 5}) EXPECT_EQ(expect_same_as_separate(table, {&q, &k, &v}, n_tokens, 2, "mixed"), 3);
}

INSTANTIATE_TEST_SUITE_P(Isas, SameInput, testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace nucleus
