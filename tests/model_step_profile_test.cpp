// Step profiles (kernels/step_profile.h, `nucleus bench --profile`): every matmul of a step is counted
// under its weight type, the parts never add up to more than the step, profiling changes no logit,
// and the CLI reports the split per test — and, for `nucleus bench batch --profile`, per batch size
// over exactly the decode phase's steps, with that phase's GFLOP/s against the machine's peak.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "engine/batch_benchmark.h"
#include "io/gguf.h"
#include "model/cost_model.h"
#include "model/model.h"
#include "model/sequence_runner.h"
#include "model/synthetic_model.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

// A 2-layer Llama-shape model with Q4_K matrices and the repository's own stories260K vocabulary
// (no shared assets needed), written once into the temp directory.
std::string profile_model_path() {
  static const std::string path = [] {
    const std::string p = std::filesystem::temp_directory_path() / ("nucleus-profile-" + std::to_string(getpid()) + ".gguf");
    SyntheticModelSpec spec;
    spec.vocab_path = std::string(NUCLEUS_SOURCE_DIR) + "/models/stories260K.gguf";
    spec.dim = 256, spec.layers = 2, spec.heads = 4, spec.kv_heads = 2, spec.ffn = 512;
    spec.type = GgmlType::Q4_K;
    write_synthetic_model(spec, p, 1);
    return p;
  }();
  return path;
}

std::vector<int32_t> prompt_tokens() { return {1, 5, 9, 23, 77, 101, 4, 8}; }

TEST(StepProfile, CountsEveryMatmulOfEveryStepAndChangesNoLogit) {
  auto model = Model::load(GgufFile::open(profile_model_path()));
  const std::vector<int32_t> tokens = prompt_tokens();
  std::vector<float> plain, profiled;
  {
    SequenceRunner runner(*model, 16, 2);
    plain = runner.feed(tokens, /*all_logits=*/true);
    const auto next = runner.feed({42}, true);
    plain.insert(plain.end(), next.begin(), next.end());
  }
  StepProfile profile;
  model->set_profile(&profile);
  {
    SequenceRunner runner(*model, 16, 2);
    profiled = runner.feed(tokens, true);
    const auto next = runner.feed({42}, true);
    profiled.insert(profiled.end(), next.begin(), next.end());
  }
  model->set_profile(nullptr);
  ASSERT_EQ(plain.size(), profiled.size());
  EXPECT_EQ(std::memcmp(plain.data(), profiled.data(), plain.size() * sizeof(float)), 0) << "profiling changed the logits";

  EXPECT_EQ(profile.steps, 2);  // the prompt, then one token
  int64_t calls = 0, matrices = 0;
  double matmul_seconds = 0, bytes = 0;
  for (const auto& [type, m] : profile.matmul) {
    calls += m.calls;
    matrices += m.matrices;
    matmul_seconds += m.seconds;
    bytes += m.weight_bytes;
    EXPECT_GT(m.seconds, 0.0) << ggml_type_name(type);
    EXPECT_LE(m.quantize_seconds, m.seconds) << ggml_type_name(type);
  }
  // Per step: Q, K, V, O, gate, up, down in each of the 2 layers, then the output matrix; where
  // Q4_K is packed for the model's table, Q, K and V are one pass and gate and up another.
  EXPECT_EQ(matrices, 2 * (2 * 7 + 1));
  const bool joint = packed_kquant_kernel(model->kernels(), GgmlType::Q4_K) != nullptr;
  EXPECT_EQ(calls, joint ? 2 * (2 * 4 + 1) : 2 * (2 * 7 + 1));
  EXPECT_DOUBLE_EQ(bytes, 2.0 * static_cast<double>(model->weight_bytes()));
  EXPECT_TRUE(profile.matmul.count(GgmlType::Q4_K));
  EXPECT_GT(profile.attention_seconds, 0.0);
  EXPECT_LE(matmul_seconds + profile.attention_seconds, profile.step_seconds);

  // Detached: further steps add nothing.
  const StepProfile before = profile;
  SequenceRunner runner(*model, 4, 1);
  runner.feed({7}, false);
  EXPECT_EQ(profile.steps, before.steps);
  EXPECT_EQ(profile.step_seconds, before.step_seconds);
}

TEST(StepProfile, BenchPrintsTheSplitOfEachTest) {
  const auto result = test::run_nucleus("bench -m " + profile_model_path() + " -p 8 -n 3 -r 1 -t 2 --profile --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto rows = nlohmann::json::parse(result.out);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    ASSERT_TRUE(row.contains("profile")) << row.dump();
    const auto& p = row["profile"];
    EXPECT_EQ(p["steps"].get<int64_t>(), row["n_prompt"].get<int64_t>() > 0 ? 1 : 3);
    double shares = p["attention_share"].get<double>() + p["other_share"].get<double>();
    for (const auto& m : p["matmul"]) shares += m["share"].get<double>();
    EXPECT_NEAR(shares, 1.0, 1e-6) << "matmuls, attention and the other operators make up the step";
    EXPECT_GE(p["sync_share"].get<double>(), 0.0);
    EXPECT_LE(p["sync_share"].get<double>(), 1.0);
  }
  // The context of -d is fed untimed, and unprofiled: the profile holds the timed steps only.
  const auto deep = test::run_nucleus("bench -m " + profile_model_path() + " -d 8 -p 0 -n 3 -r 1 --profile --json");
  ASSERT_EQ(deep.exit_code, 0) << deep.err;
  EXPECT_EQ(nlohmann::json::parse(deep.out)[0]["profile"]["steps"].get<int64_t>(), 3) << deep.out;
  const auto text = test::run_nucleus("bench -m " + profile_model_path() + " -p 0 -n 2 -r 1 --profile");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("profile tg2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("matmul Q4_K"), std::string::npos) << text.out;
}

TEST(StepProfile, BatchBenchmarkProfilesExactlyTheDecodeSteps) {
  auto model = Model::load(GgufFile::open(profile_model_path()));
  StepProfile profile;
  BatchBenchmarkConfig config;
  config.n_prompt = 8;
  config.n_gen = 5;
  config.n_threads = 2;
  config.decode_profile = &profile;
  const int64_t batch = 3;
  const BatchPoint p = measure_batch(*model, config, batch);
  // One step prefills all three prompts (24 tokens, within the budget) and gives each its first
  // token; then one decode step per further token.
  EXPECT_EQ(p.decode_steps, config.n_gen - 1);
  EXPECT_EQ(profile.steps, p.decode_steps) << "the profile covers the decode steps and nothing else";
  int64_t matrices = 0;
  for (const auto& [type, m] : profile.matmul) matrices += m.matrices;
  EXPECT_EQ(matrices, p.decode_steps * (2 * 7 + 1));
  EXPECT_GT(p.decode_seconds, 0.0);
  EXPECT_LE(profile.step_seconds, p.decode_seconds);
  // The decode tokens' FLOPs: batch · (n_gen − 1) tokens, each costing between a token at the first
  // and at the last decode position; every weight read once per decode step.
  const double per_token = p.decode_flops / static_cast<double>(batch * (config.n_gen - 1));
  EXPECT_GE(per_token, estimate_sequence_step_cost(*model, config.n_prompt, 1).flops);
  EXPECT_LE(per_token, estimate_sequence_step_cost(*model, config.n_prompt + config.n_gen - 2, 1).flops);
  EXPECT_LT(estimate_sequence_step_cost(*model, config.n_prompt, 1).flops,
            estimate_sequence_step_cost(*model, config.n_prompt + config.n_gen - 2, 1).flops);
  EXPECT_GE(p.decode_bytes, static_cast<double>(p.decode_steps) * estimate_sequence_step_cost(*model, 0, 1).weight_bytes);

  // Detached on return: further steps add nothing.
  const int64_t steps = profile.steps;
  SequenceRunner runner(*model, 4, 1);
  runner.feed({7}, false);
  EXPECT_EQ(profile.steps, steps);
}

TEST(StepProfile, BenchBatchReportsArithmeticAgainstThePeakAndTheSplitPerBatch) {
  const auto result = test::run_nucleus("bench batch -m " + profile_model_path() +
                                        " --batch 1,2 --prompt 8 --gen 4 -t 2 --profile --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto rows = nlohmann::json::parse(result.out);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    const double gflop = row["gflop_per_s"].get<double>();
    EXPECT_GT(gflop, 0.0) << row.dump();
    EXPECT_NEAR(gflop, row["decode_flops"].get<double>() / row["decode_seconds"].get<double>() / 1e9, 1e-9 * gflop);
    EXPECT_NEAR(row["compute_fraction"].get<double>(), gflop / row["machine_gflop_per_s"].get<double>(), 1e-12);
    EXPECT_NEAR(row["bandwidth_fraction"].get<double>(),
                row["gb_per_s"].get<double>() / row["machine_read_gb_per_s"].get<double>(), 1e-12);
    ASSERT_TRUE(row.contains("profile")) << row.dump();
    const auto& p = row["profile"];
    EXPECT_EQ(p["steps"].get<int64_t>(), row["decode_steps"].get<int64_t>());
    EXPECT_EQ(p["steps"].get<int64_t>(), 3);
    double shares = p["attention_share"].get<double>() + p["other_share"].get<double>();
    for (const auto& m : p["matmul"]) shares += m["share"].get<double>();
    EXPECT_NEAR(shares, 1.0, 1e-6);
  }
  const auto text = test::run_nucleus("bench batch -m " + profile_model_path() + " --batch 2 --prompt 8 --gen 3 --profile");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("GFLOP/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("%fma"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("profile batch 2 decode"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("matmul Q4_K"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace nucleus
