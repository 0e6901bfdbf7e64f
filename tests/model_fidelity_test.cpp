// Fidelity against llama.cpp: teacher-forced logits for every shared model and reference
// case, on every kernel table this CPU supports.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "model/sequence_runner.h"
#include "core/weight_memory.h"
#include "io/gguf.h"
#include "model/model.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

struct FidelityCase {
  std::string model;      // file under models/
  std::string reference;  // file under reference/
  double tolerance;       // max |logit difference| against the reference top-8
};

std::string case_name(const testing::TestParamInfo<std::tuple<FidelityCase, Isa>>& info) {
  std::string name = std::get<0>(info.param).reference + "_" + isa_name(std::get<1>(info.param));
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

class Fidelity : public testing::TestWithParam<std::tuple<FidelityCase, Isa>> {};

TEST_P(Fidelity, TeacherForcedLogitsMatchLlamaCpp) {
  NUCLEUS_REQUIRE_SHARED();
  const auto& [c, isa] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  auto model = Model::load(GgufFile::open(test::shared_path("models/" + c.model)));
  model->set_kernels(dot_kernels_for(isa));
  const auto reference = nlohmann::json::parse(test::read_file(test::shared_path("reference/" + c.reference)));
  const int64_t n_vocab = model->hparams().n_vocab;
  int checked_logits = 0, checked_argmax = 0;
  double worst = 0.0;
  for (const auto& rc : reference["cases"]) {
    std::vector<int32_t> tokens = rc["prompt_tokens"].get<std::vector<int32_t>>();
    const size_t n_prompt = tokens.size();
    for (const auto& step : rc["steps"]) tokens.push_back(step["token"].get<int32_t>());
    SequenceRunner runner(*model, static_cast<int64_t>(tokens.size()), 2);
    const std::vector<float>& logits = runner.feed(tokens, /*all_logits=*/true);
    for (size_t s = 0; s < rc["steps"].size(); ++s) {
      const auto& step = rc["steps"][s];
      const float* row = logits.data() + (n_prompt - 1 + s) * static_cast<size_t>(n_vocab);
      double step_worst = 0.0;
      for (const auto& entry : step["top"]) {
        step_worst = std::max(step_worst, std::fabs(row[entry[0].get<int>()] - entry[1].get<double>()));
        ++checked_logits;
      }
      worst = std::max(worst, step_worst);
      EXPECT_LE(step_worst, c.tolerance) << rc["prompt"] << " step " << s;
      const double margin = step["top"][0][1].get<double>() - step["top"][1][1].get<double>();
      if (margin > 2 * c.tolerance) {
        int32_t best = 0;
        for (int32_t i = 1; i < n_vocab; ++i)
          if (row[i] > row[best]) best = i;
        EXPECT_EQ(best, step["token"].get<int32_t>()) << rc["prompt"] << " step " << s;
        ++checked_argmax;
      }
    }
  }
  EXPECT_GT(checked_logits, 100);
  EXPECT_GT(checked_argmax, 0);
  RecordProperty("worst_logit_difference", std::to_string(worst));
}

const FidelityCase kCases[] = {
    {"stories260K.gguf", "stories260K.json", 1e-4},
    {"test/llama-spm-f32.gguf", "llama-spm-f32.json", 1e-4},
    {"test/llama-spm-f16.gguf", "llama-spm-f16.json", 2e-2},
    {"test/llama-spm-q8_0.gguf", "llama-spm-q8_0.json", 1e-4},  // 5e-6 measured
    // Q4_0 agrees to 5e-6 (measured; the reference's own rounding). It once differed by 4.7e-2:
    // a Q4_0 embedding row is d·q with small integer q, so after rms_norm some Q8_0 activations sit
    // exactly on ±63.5 ties, and rms_norm squaring in f64 instead of f32 (as llama.cpp does) moved
    // the scale by an ulp and flipped them. tests/ops_test.cpp (RmsNorm) pins llama.cpp's rounding.
    {"test/llama-spm-q4_0.gguf", "llama-spm-q4_0.json", 1e-4},
    // K-quants mixed as published files mix them (Q4_K_M: Q4_K + Q6_K; Q5_K_M: Q5_K + Q6_K). Every
    // table follows llama.cpp's AVX2 float order in the Q5_K and Q6_K dot products
    // (kernels/dot_scalar.cpp) and its AVX-512 order in rope, attention and swiglu
    // (kernels/ggml_order.h), so the logits agree to ~5e-6 — the reference's own printing. Before
    // those orders matched, last-bit differences moved Q8_K activations across rounding ties and some
    // steps were off by up to 5.5e-2 (Q5_K_M) and 4.5e-2 (Q6_K). Q4_K sums each block as integers
    // first (not llama.cpp's x86 order): Q4_K_M measured 7e-6, and a flipped tie would show here.
    {"test/llama-spm-q4_k_m.gguf", "llama-spm-q4_k_m.json", 1e-4},
    {"test/llama-spm-q5_k_m.gguf", "llama-spm-q5_k_m.json", 1e-4},
    {"test/llama-spm-q6_k.gguf", "llama-spm-q6_k.json", 1e-4},
    {"test/qwen2-f16.gguf", "qwen2-f16.json", 2e-2},
    {"test/llama3-f16.gguf", "llama3-f16.json", 2e-2},
};

INSTANTIATE_TEST_SUITE_P(AllModels, Fidelity,
                         testing::Combine(testing::ValuesIn(kCases), testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512)),
                         case_name);

TEST(ModelSharing, SharedWeightsGiveTheSameLogitsWithoutCopyingTheWeights) {
  // Model::share_weights (the explainer beside the served engine): the same matrices, by pointer,
  // packed ones included; each model runs with its own scratch and gives identical logits.
  NUCLEUS_REQUIRE_SHARED();
  for (const char* file : {"models/test/llama-spm-q4_0.gguf", "models/test/llama-spm-f16.gguf"}) {
    auto model = Model::load(GgufFile::open(test::shared_path(file)));
    std::unique_ptr<Model> shared = model->share_weights();
    const WeightMatrix& a = model->weights().layers[0].w_up;
    const WeightMatrix& b = shared->weights().layers[0].w_up;
    EXPECT_EQ(a.data, b.data) << file;
    EXPECT_EQ(a.packed, b.packed) << file;
    EXPECT_EQ(&model->file(), &shared->file()) << file;
    const std::vector<int32_t> tokens = {1, 15, 27, 300, 4, 99};
    SequenceRunner first(*model, 8, 2), second(*shared, 8, 1);
    const std::vector<float> want = first.feed(tokens, true);
    model.reset();  // the copy keeps the weights alive
    EXPECT_EQ(second.feed(tokens, true), want) << file;
  }
}

TEST(ModelLoading, RunFromMappingLeavesWeightsInTheFileAndGivesTheSameLogits) {
  // --mmap (ModelLoadOptions::run_from_mapping): no packing, no copies; the kernels read the stored
  // rows where the file has them and produce the same logits as the packed model.
  NUCLEUS_REQUIRE_SHARED();
  const std::string path = test::shared_path("models/test/llama-spm-q4_0.gguf");
  auto moved = Model::load(GgufFile::open(path));
  auto in_place = Model::load(GgufFile::open(path), ModelLoadOptions{true});
  EXPECT_TRUE(moved->weights_moved());
  EXPECT_NE(moved->weights().layers[0].w_up.packed, nullptr);
  EXPECT_FALSE(in_place->weights_moved());
  EXPECT_EQ(in_place->weights().layers[0].w_up.packed, nullptr);
  const std::vector<int32_t> tokens = {1, 15, 27, 300, 4, 99};
  SequenceRunner a(*moved, 8, 2), b(*in_place, 8, 2);
  EXPECT_EQ(a.feed(tokens, true), b.feed(tokens, true));
}

TEST(WeightMemory, CopiesAreMadeOnlyWhenTheyFitWithHeadroom) {
  EXPECT_GT(available_memory_bytes(), 0u);  // Linux reports MemAvailable
  const size_t gib = size_t{1} << 30;
  EXPECT_TRUE(weight_copies_fit(2 * gib, 8 * gib));
  EXPECT_TRUE(weight_copies_fit(2 * gib, 2 * gib + kWeightMemoryHeadroom));
  EXPECT_FALSE(weight_copies_fit(2 * gib, 2 * gib + kWeightMemoryHeadroom - 1));
  EXPECT_FALSE(weight_copies_fit(14 * gib, 14 * gib + gib / 2));  // a 14 GB F16 model with 14.5 GB free
  EXPECT_TRUE(weight_copies_fit(14 * gib, 0));  // unknown: copy, as before
}

}  // namespace
}  // namespace nucleus
