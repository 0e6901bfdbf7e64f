// The CLI end to end: the acceptance outputs of `generate`, llama2.c loading and conversion,
// `tokenize --cases`, `logits`, `inspect`, and one-line errors with non-zero exits.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "test_helpers.h"

namespace nucleus {
namespace {

using test::run_nucleus;
using test::shared_path;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

TEST(CliGenerate, GreedyContinuationMatchesReference) {
  NUCLEUS_REQUIRE_SHARED();
  const auto reference = nlohmann::json::parse(test::read_file(shared_path("reference/stories260K.json")));
  const std::string expected = reference["cases"][0]["text"];
  auto r = run_nucleus("generate -m " + quote(shared_path("models/stories260K.gguf")) +
                       " -p 'Once upon a time' -n 40 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected + "\n");
  EXPECT_NE(r.err.find("prompt tokens: 5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decode:"), std::string::npos) << r.err;
}

TEST(CliGenerate, EveryReferencePromptMatches) {
  NUCLEUS_REQUIRE_SHARED();
  const auto reference = nlohmann::json::parse(test::read_file(shared_path("reference/stories260K.json")));
  for (const auto& c : reference["cases"]) {
    const std::string prompt = c["prompt"];
    const int n = static_cast<int>(c["steps"].size());
    auto r = run_nucleus("generate -m " + quote(shared_path("models/stories260K.gguf")) + " -p " + quote(prompt) +
                         " -n " + std::to_string(n) + " --temp 0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(trim(r.out), trim(c["text"].get<std::string>())) << prompt;
  }
}

// llama2.c's `run -n 256` samples at positions 0..255 after BOS, i.e. 256 tokens; the reference
// text is exactly those, so it takes -n 256 here (255 stops one token short, before the final ".").
TEST(CliGenerate, EmptyPromptMatchesLlama2cRun) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string expected = test::read_file(shared_path("reference/stories260K-llama2c-greedy-256.txt"));
  auto r = run_nucleus("generate -m " + quote(shared_path("models/stories260K.gguf")) + " -n 256 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trim(r.out), trim(expected));
}

TEST(CliLlama2c, CheckpointPairGivesTheSameTokens) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string expected = test::read_file(shared_path("reference/stories260K-llama2c-greedy-256.txt"));
  auto r = run_nucleus("generate -m " + quote(shared_path("models/llama2c/stories260K.bin")) + " --tokenizer " +
                       quote(shared_path("models/llama2c/tok512.bin")) + " -n 256 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trim(r.out), trim(expected));
}

TEST(CliLlama2c, ConvertedGgufGivesTheOriginalsLogits) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string out = testing::TempDir() + "/converted-stories260K.gguf";
  auto c = run_nucleus("convert " + quote(shared_path("models/llama2c/stories260K.bin")) + " " +
                       quote(shared_path("models/llama2c/tok512.bin")) + " -o " + quote(out));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string tokens = "--tokens 1,403,407,261,378,432,383 --top 16";
  auto converted = run_nucleus("logits -m " + quote(out) + " " + tokens);
  auto original = run_nucleus("logits -m " + quote(shared_path("models/llama2c/stories260K.bin")) + " --tokenizer " +
                              quote(shared_path("models/llama2c/tok512.bin")) + " " + tokens);
  auto published = run_nucleus("logits -m " + quote(shared_path("models/stories260K.gguf")) + " " + tokens);
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  ASSERT_EQ(original.exit_code, 0) << original.err;
  EXPECT_EQ(converted.out, original.out);
  EXPECT_EQ(converted.out, published.out);  // and equal to llama.cpp's own conversion
  EXPECT_EQ(std::count(converted.out.begin(), converted.out.end(), '\n'), 7);

  // Same tensor names, types and shapes, and the same metadata keys as the published GGUF.
  auto inspect_converted = run_nucleus("inspect " + quote(out));
  auto inspect_published = run_nucleus("inspect " + quote(shared_path("models/stories260K.gguf")));
  ASSERT_EQ(inspect_converted.exit_code, 0);
  auto section = [](const std::string& s, const std::string& from) { return s.substr(s.find(from)); };
  EXPECT_EQ(section(inspect_converted.out, "tensors ("), section(inspect_published.out, "tensors ("));
  std::remove(out.c_str());
}

TEST(CliLogits, PrintsOneJsonLinePerPositionDescending) {
  NUCLEUS_REQUIRE_SHARED();
  auto r = run_nucleus("logits -m " + quote(shared_path("models/stories260K.gguf")) + " --tokens 1,403,407 --top 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int pos = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["pos"], pos++);
    ASSERT_EQ(j["top"].size(), 5u);
    for (size_t i = 1; i < 5; ++i) EXPECT_GE(j["top"][i - 1][1].get<double>(), j["top"][i][1].get<double>());
  }
  EXPECT_EQ(pos, 3);
}

TEST(CliTokenize, SpmVocabCasesMatchLlamaCppByteForByte) {
  NUCLEUS_REQUIRE_SHARED();
  for (const std::string vocab : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"}) {
    const std::string path = shared_path("vocab/" + vocab);
    auto r = run_nucleus("tokenize -m " + quote(path) + " --cases " + quote(path + ".inp"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, test::read_file(path + ".out")) << vocab;
  }
}

TEST(CliTokenize, PrintsIdsWithAndWithoutSpecialTokens) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string model = quote(shared_path("models/stories260K.gguf"));
  auto with_bos = run_nucleus("tokenize -m " + model + " 'Once upon a time'");
  EXPECT_EQ(with_bos.out, "[1,403,407,261,378]\n");
  auto without = run_nucleus("tokenize -m " + model + " --no-special 'Once upon a time'");
  EXPECT_EQ(without.out, "[403,407,261,378]\n");
}

TEST(CliInspect, ShowsArchitectureTensorsAndTokenizer) {
  NUCLEUS_REQUIRE_SHARED();
  auto r = run_nucleus("inspect " + quote(shared_path("models/test/qwen2-f16.gguf")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("qwen2"), std::string::npos);
  EXPECT_NE(r.out.find("blk.0.attn_q.bias"), std::string::npos);
  EXPECT_NE(r.out.find("n_head_kv 2"), std::string::npos);
  EXPECT_NE(r.out.find("neox"), std::string::npos);
  EXPECT_NE(r.out.find("tokenizer:"), std::string::npos);
}

// Every user error: one line on stderr, non-zero exit, nothing on stdout.
void expect_one_line_error(const std::string& args, const std::string& needle) {
  auto r = run_nucleus(args);
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << args;
}

TEST(CliErrors, MissingFileBadFlagAndOverlongPrompt) {
  NUCLEUS_REQUIRE_SHARED();
  expect_one_line_error("generate -m /nonexistent/model.gguf -p hi", "/nonexistent/model.gguf");
  expect_one_line_error("generate --no-such-flag", "no-such-flag");
  expect_one_line_error("generate -m " + quote(shared_path("models/stories260K.gguf")) + " --temp abc", "temp");
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += "the cat sat. ";
  expect_one_line_error("generate -m " + quote(shared_path("models/stories260K.gguf")) + " -c 64 -p " + quote(long_prompt),
                        "context length 64");
  expect_one_line_error("logits -m " + quote(shared_path("models/stories260K.gguf")) + " --tokens 1,99999", "out of range");
  expect_one_line_error("inspect " + quote(shared_path("reference/stories260K.json")), "not a GGUF");
  expect_one_line_error("generate -m " + quote(shared_path("models/llama2c/stories260K.bin")), "--tokenizer");
}

}  // namespace
}  // namespace nucleus
