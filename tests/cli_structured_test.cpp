// `nucleus generate` under structured output in every mode (issue 19): the engine's one-sequence
// path, --n samples, --beams and --logprobs each keep the constraint, on the random-weight Llama 3
// test model (128k vocabulary), whose unconstrained output is nowhere near JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_helpers.h"

namespace nucleus {
namespace {

using test::run_nucleus;
using test::shared_path;

std::string quote(const std::string& s) { return "'" + s + "'"; }

// Two required keys with closed sets of values, no others: every finished output is one of eight
// objects (whitespace aside), and the grammar forces an end quickly even on random weights.
constexpr const char* kSchema =
    R"({"type":"object","properties":{"ok":{"type":"boolean"},"colour":{"enum":["red","green"]}},)"
    R"("required":["ok","colour"],"additionalProperties":false})";

class CliStructured : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::shared_available()) GTEST_SKIP() << "shared assets not found at " << test::shared_dir();
    schema_file_ = (std::filesystem::temp_directory_path() / ("nucleus_cli_schema_" + std::to_string(::getpid()) + ".json")).string();
    std::ofstream(schema_file_) << kSchema;
  }
  void TearDown() override {
    if (!schema_file_.empty()) std::filesystem::remove(schema_file_);
  }
  std::string generate(const std::string& flags) {
    return "generate -m " + quote(shared_path("models/test/llama3-f16.gguf")) + " -p 'Answer:' -t 1 " + flags;
  }
  std::string schema_file_;
};

// The schema's meaning, checked independently of the grammar.
void expect_valid(const std::string& text) {
  nlohmann::json value;
  ASSERT_NO_THROW(value = nlohmann::json::parse(text)) << text;
  ASSERT_TRUE(value.is_object()) << text;
  EXPECT_EQ(value.size(), 2u) << text;
  ASSERT_TRUE(value.contains("ok") && value["ok"].is_boolean()) << text;
  ASSERT_TRUE(value.contains("colour") && value["colour"].is_string()) << text;
  EXPECT_TRUE(value["colour"] == "red" || value["colour"] == "green") << text;
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST_F(CliStructured, OneSequenceOnTheEngineIsValid) {
  const auto r = run_nucleus(generate("--json-schema " + quote(schema_file_) + " -n 64 --temp 0"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = r.out;
  ASSERT_FALSE(text.empty());
  text.pop_back();  // the closing newline
  expect_valid(text);
}

TEST_F(CliStructured, EverySampleOfNIsValidAndTheyDiffer) {
  const auto r = run_nucleus(generate("--json-schema " + quote(schema_file_) + " -n 64 --n 6 --temp 1.5 --seed 11"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;
  std::vector<std::string> texts;
  for (const auto& line : lines) {
    EXPECT_EQ(line["finish_reason"], "stop") << line.dump();
    expect_valid(line["text"].get<std::string>());
    texts.push_back(line["text"].get<std::string>());
  }
  // Sampled at a high temperature from random weights: the six are not all the same object.
  std::sort(texts.begin(), texts.end());
  EXPECT_GT(std::unique(texts.begin(), texts.end()) - texts.begin(), 1) << r.out;
}

TEST_F(CliStructured, EveryBeamIsValid) {
  const auto r = run_nucleus(generate("--json-schema " + quote(schema_file_) + " -n 64 --beams 3 --num-return-sequences 3"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const auto& line : lines) {
    EXPECT_EQ(line["finish_reason"], "stop") << line.dump();
    expect_valid(line["text"].get<std::string>());
    EXPECT_TRUE(std::isfinite(line["sum_logprobs"].get<double>())) << line.dump();
  }
}

// --logprobs reports the masked distribution: every alternative listed with a non-zero probability
// continues a choice, the probabilities of the alternatives sum to at most 1, and the text is one of
// the choices.
TEST_F(CliStructured, LogprobsAreOfTheMaskedDistribution) {
  const std::vector<std::string> choices = {"alpha", "beta", "gamma delta"};
  const auto r = run_nucleus(generate("--choice 'alpha,beta,gamma delta' -n 16 --temp 0 --logprobs 5"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_GE(lines.size(), 2u) << r.out;
  auto continues_a_choice = [&](const std::string& text) {
    for (const std::string& c : choices)
      if (c.compare(0, text.size(), text) == 0) return true;
    return false;
  };
  std::string so_far;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    const auto& line = lines[i];
    double mass = 0;
    for (const auto& alt : line["top_logprobs"]) {
      // A masked token has probability 0: logprob −inf, which JSON writes as null. It may fill the
      // list when fewer than 5 tokens are allowed.
      if (alt["logprob"].is_null()) continue;
      const double lp = alt["logprob"].get<double>();
      mass += std::exp(lp);
      EXPECT_TRUE(continues_a_choice(so_far + alt["text"].get<std::string>()))
          << "position " << i << ": '" << so_far << "' + '" << alt["text"].get<std::string>() << "'";
    }
    EXPECT_LE(mass, 1.0 + 1e-4) << line.dump();
    so_far += line["text"].get<std::string>();
  }
  const auto& result = lines.back();
  EXPECT_EQ(result["finish_reason"], "stop") << result.dump();
  const std::string text = result["text"];
  EXPECT_TRUE(text == choices[0] || text == choices[1] || text == choices[2]) << text;
  EXPECT_EQ(text, so_far);
}

}  // namespace
}  // namespace nucleus
