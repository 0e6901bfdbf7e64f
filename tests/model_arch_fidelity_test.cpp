// Every architecture family nucleus runs, against llama.cpp: the shared tiny random-weight models of
// ../shared/models/arch (one per family, written to llama.cpp's conventions) teacher-forced through
// their reference steps, on every kernel table this CPU supports. Tolerances follow the shared
// README: 1e-3 for f32 families (qwen35 included: its prompts run through the chunked delta-net form,
// one forward over all the tokens), 5e-3 for Gemma (llama.cpp's f16-table GELU makes inputs on an f16
// rounding boundary flip by one f16 ulp under any change of summation order; we emulate the table,
// so the measured differences are far smaller — the test records the worst one).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "model/model.h"
#include "model/sequence_runner.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

struct ArchCase {
  std::string name;  // models/arch/<name>.gguf, reference/arch/<name>.json
  double tolerance;
};

class ArchFidelity : public testing::TestWithParam<std::tuple<ArchCase, Isa>> {};

std::string case_name(const testing::TestParamInfo<std::tuple<ArchCase, Isa>>& info) {
  std::string name = std::get<0>(info.param).name + "_" + isa_name(std::get<1>(info.param));
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

TEST_P(ArchFidelity, TeacherForcedLogitsMatchLlamaCpp) {
  NUCLEUS_REQUIRE_SHARED();
  const auto& [c, isa] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << isa_name(isa) << " not supported on this CPU";
  // The references ran with a 512-token context (Phi-3 picks its LongRoPE factor set by it).
  ModelLoadOptions options;
  options.n_ctx = 512;
  auto model = Model::load(GgufFile::open(test::shared_path("models/arch/" + c.name + ".gguf")), options);
  model->set_kernels(dot_kernels_for(isa));
  const auto reference = nlohmann::json::parse(test::read_file(test::shared_path("reference/arch/" + c.name + ".json")));
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
      for (const auto& entry : step["top"]) {
        const double diff = std::fabs(row[entry[0].get<int>()] - entry[1].get<double>());
        worst = std::max(worst, diff);
        EXPECT_LE(diff, c.tolerance) << rc["prompt"] << " step " << s << " token " << entry[0];
        ++checked_logits;
      }
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
  EXPECT_GT(checked_logits, 400);
  EXPECT_GT(checked_argmax, 40);
  RecordProperty("worst_logit_difference", std::to_string(worst));
  std::printf("[ worst    ] %s %s: %.3g over %d logits\n", c.name.c_str(), isa_name(isa), worst, checked_logits);
}

const ArchCase kArchCases[] = {
    {"llama31", 1e-3}, {"mixtral", 1e-3}, {"qwen3", 1e-3},  {"qwen3moe", 1e-3}, {"phi3", 1e-3},
    {"phi3-long", 1e-3}, {"gemma2", 5e-3}, {"gemma3", 5e-3}, {"gemma4", 5e-3}, {"qwen35", 1e-3},
};

INSTANTIATE_TEST_SUITE_P(SharedArchModels, ArchFidelity,
                         testing::Combine(testing::ValuesIn(kArchCases), testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512)),
                         case_name);

}  // namespace
}  // namespace nucleus
