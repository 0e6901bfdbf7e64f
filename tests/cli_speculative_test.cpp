// The speculative CLI end to end: `generate --spec/--draft` reproduces the greedy reference text
// with every proposer, refuses what it cannot do with a one-line error, and `bench spec` reports
// every γ with figures that are consistent with each other. Not timings.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "model/cost_model.h"
#include "model/model.h"
#include "speculative/spec_benchmark.h"
#include "speculative/speculative_stats.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

using nlohmann::json;
using test::run_nucleus;
using test::shared_path;

std::string quote(const std::string& s) { return "'" + s + "'"; }

TEST(CliSpeculative, GreedyGenerateMatchesTheReferenceWithEveryProposer) {
  NUCLEUS_REQUIRE_SHARED();
  const auto reference = json::parse(test::read_file(shared_path("reference/stories260K.json")));
  const std::string expected = reference["cases"][0]["text"];
  const std::string model = quote(shared_path("models/stories260K.gguf"));
  for (const std::string& flags : std::vector<std::string>{"--spec ngram --gamma 2", "--spec self:2 --gamma 4", "--draft " + model + " --gamma 8"}) {
    const auto r = run_nucleus("generate -m " + model + " -p 'Once upon a time' -n 40 --temp 0 " + flags);
    ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_EQ(r.out, expected + "\n") << flags;
    EXPECT_NE(r.err.find("speculative:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tokens per pass"), std::string::npos) << r.err;
  }
  // The target as its own draft: every draft is accepted, γ + 1 tokens per pass.
  const auto r = run_nucleus("generate -m " + model + " -p 'Once upon a time' -n 40 --temp 0 --draft " + model + " --gamma 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("alpha 1.000, tokens per pass 5.00"), std::string::npos) << r.err;
}

TEST(CliSpeculative, RefusesWhatItCannotDo) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string model = quote(shared_path("models/stories260K.gguf"));
  struct Case {
    std::string flags, message;
  };
  const Case cases[] = {
      {"--spec self:9", "K must be between 1 and the target's 5 layers"},
      {"--spec foo", "expected ngram or self:K"},
      {"--spec ngram --n 2", "cannot be combined with --n"},
      {"--spec ngram --draft " + model, "give only one of --draft"},
      {"--draft " + quote(shared_path("models/test/llama3-f16.gguf")), "vocabulary differs from the target's"},
      {"--spec ngram --gamma 0", "--gamma"},
  };
  for (const Case& c : cases) {
    const auto r = run_nucleus("generate -m " + model + " -n 4 " + c.flags);
    EXPECT_NE(r.exit_code, 0) << c.flags;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.flags << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

TEST(CliBenchSpec, ReportsEveryGammaWithConsistentFigures) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string model = quote(shared_path("models/stories260K.gguf"));
  const auto r = run_nucleus("bench spec -m " + model + " --draft " + model + " --gamma 1,2,4 -n 24 -t 1 -r 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  ASSERT_EQ(report.size(), 3u);
  const int gammas[] = {1, 2, 4};
  for (size_t i = 0; i < report.size(); ++i) {
    const json& row = report[i];
    const int gamma = gammas[i];
    EXPECT_EQ(row["gamma"], gamma);
    // The target drafting for itself, greedy: everything is accepted.
    EXPECT_DOUBLE_EQ(row["alpha"].get<double>(), 1.0) << row.dump();
    EXPECT_GT(row["tokens_per_pass"].get<double>(), 1.0) << row.dump();
    EXPECT_LE(row["tokens_per_pass"].get<double>(), gamma + 1.0) << row.dump();
    EXPECT_GT(row["c"].get<double>(), 0.0);
    EXPECT_GT(row["speedup"].get<double>(), 0.0);
    EXPECT_GT(row["verify_cost_ratio"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(row["speedup_predicted"].get<double>(),
                     predicted_speedup(row["alpha"].get<double>(), gamma, row["c"].get<double>()));
  }
  const auto bad = run_nucleus("bench spec -m " + model + " --spec ngram --gamma 0");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--gamma: '0'"), std::string::npos) << bad.err;
  const auto none = run_nucleus("bench spec -m " + model);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("give --draft MODEL or --spec"), std::string::npos) << none.err;
}

// The verification-cost figures come with the two passes' milliseconds (a ratio alone hides a
// one-token step that got slower), the ratio of the fastest of each, and with --profile where each
// kind of pass spent its time, over exactly the timed rounds.
TEST(CliBenchSpec, VerificationCostShowsBothPassesAndTheirProfiles) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string model = quote(shared_path("models/stories260K.gguf"));
  const auto r = run_nucleus("bench spec -m " + model + " --spec self:1 --gamma 3 -n 8 -t 1 -r 5 --json --profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  ASSERT_EQ(report.size(), 1u);
  const json& row = report[0];
  const double step_ms = row["step_ms"], verify_ms = row["verify_ms"];
  const double step_min = row["step_min_ms"], verify_min = row["verify_min_ms"];
  EXPECT_GT(step_min, 0.0);
  EXPECT_GT(verify_min, 0.0);
  EXPECT_LE(step_min, step_ms);
  EXPECT_LE(verify_min, verify_ms);
  EXPECT_DOUBLE_EQ(row["verify_cost_ratio_quiet"].get<double>(), verify_min / step_min);
  // What bounds each pass: the step's weight stream and the pass's arithmetic rate, from the cost
  // model's bytes and FLOPs at the prompt's end over the mean times.
  const int64_t n_prompt = row["n_prompt"];
  const auto loaded = Model::load(GgufFile::open(shared_path("models/stories260K.gguf")));
  const StepCost step_cost = estimate_sequence_step_cost(*loaded, n_prompt, 1);
  EXPECT_NEAR(row["step_gb_per_s"].get<double>(), (step_cost.weight_bytes + step_cost.kv_bytes) / (step_ms * 1e6),
              1e-9 * row["step_gb_per_s"].get<double>());
  const StepCost pass_cost = estimate_sequence_step_cost(*loaded, n_prompt, 4);
  EXPECT_NEAR(row["verify_gflop_per_s"].get<double>(), pass_cost.flops / (verify_ms * 1e6), 1e-9 * row["verify_gflop_per_s"].get<double>());
  EXPECT_GT(pass_cost.flops, 3.5 * step_cost.flops);  // four tokens' arithmetic over one weight load
  for (const char* key : {"profile_step", "profile_verify"}) {
    const json& p = row[key];
    EXPECT_EQ(p["steps"], 5) << key;  // the timed rounds, not the warm-up
    ASSERT_FALSE(p["matmul"].empty()) << key;
    EXPECT_GT(p["attention_ms_per_step"].get<double>(), 0.0) << key;
    double shares = p["attention_share"].get<double>() + p["other_share"].get<double>();
    for (const json& m : p["matmul"]) shares += m["share"].get<double>();
    EXPECT_NEAR(shares, 1.0, 1e-9) << key;
  }
  // Both kinds of pass multiply the same matrices (the per-step figures are per pass of each kind).
  EXPECT_EQ(row["profile_verify"]["matmul"][0]["matrices_per_step"], row["profile_step"]["matmul"][0]["matrices_per_step"]);
  EXPECT_GT(row["profile_step"]["matmul"][0]["matrices_per_step"].get<double>(), 0.0);
  const auto text = run_nucleus("bench spec -m " + model + " --spec self:1 --gamma 3 -n 8 -t 1 -r 2 --profile");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("quiet v/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("step GB/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("profile one-token step: 2 steps"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("profile verification of 4 tokens: 2 steps"), std::string::npos) << text.out;
}

TEST(SpeculativeTheory, PredictedSpeedupFollowsLeviathanEtAl) {
  EXPECT_DOUBLE_EQ(predicted_speedup(0.0, 4, 0.0), 1.0);          // nothing accepted, free draft
  EXPECT_DOUBLE_EQ(predicted_speedup(0.0, 4, 0.25), 1.0 / 2.0);   // nothing accepted, paid draft
  EXPECT_DOUBLE_EQ(predicted_speedup(1.0, 4, 0.0), 5.0);          // everything accepted
  EXPECT_DOUBLE_EQ(predicted_speedup(1.0, 3, 0.5), 4.0 / 2.5);
  EXPECT_NEAR(predicted_speedup(0.5, 2, 0.0), 1.75, 1e-12);       // 1 + 0.5 + 0.25
  EXPECT_NEAR(predicted_speedup(0.8, 4, 0.1), (1 - 0.32768) / (0.2 * 1.4), 1e-12);
  EXPECT_NEAR(predicted_speedup(0.999999, 4, 0.0), 5.0, 1e-4);    // continuous at α → 1
}

TEST(SpeculativeTheory, AlphaCountsOnlyTestedDrafts) {
  SpeculativeStats s;
  // Three passes of γ = 4: all accepted; 1 accepted then a rejection; a rejection at once.
  s.num_passes = 3, s.num_proposed = 12, s.num_accepted = 5, s.num_rejected = 2, s.num_emitted = 8;
  EXPECT_DOUBLE_EQ(s.alpha(), 5.0 / 7.0);
  EXPECT_DOUBLE_EQ(s.acceptance_rate(), 5.0 / 12.0);
  EXPECT_DOUBLE_EQ(s.tokens_per_pass(), 8.0 / 3.0);
}

}  // namespace
}  // namespace nucleus
