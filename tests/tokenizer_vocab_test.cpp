// The tokenizers against llama.cpp on real vocabularies: its tokenizer test vectors (shared/vocab)
// and the prompt ids and decoded continuations it produced for the shared models (shared/reference).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {
namespace {

using test::read_file;
using test::shared_path;

// Vocabularies are large (Llama 3: 128k tokens, 280k merges); load each once for the whole binary.
const Tokenizer& shared_tokenizer(const std::string& relative_path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[relative_path];
  if (!slot) slot = Tokenizer::from_gguf(*GgufFile::open(shared_path(relative_path)));
  return *slot;
}

std::string vocab_file(const std::string& name) { return "vocab/ggml-vocab-" + name + ".gguf"; }

class SharedVocabTest : public ::testing::TestWithParam<std::string> {};

// The acceptance check of `nucleus tokenize --cases`: byte-for-byte equal to llama.cpp's .out file.
TEST_P(SharedVocabTest, TokenCasesMatchOutFileByteForByte) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string path = vocab_file(GetParam());
  const Tokenizer& tokenizer = shared_tokenizer(path);
  const std::string expected = read_file(shared_path(path + ".out"));
  std::string actual = format_token_cases(tokenizer, read_file(shared_path(path + ".inp")));
  // Newer llama.cpp writes the ids without the leading space of each line (qwen35's file).
  if (expected.rfind(' ', 0) != 0) {
    std::string trimmed;
    for (size_t i = 0; i < actual.size(); ++i)
      if (!(actual[i] == ' ' && (i == 0 || actual[i - 1] == '\n'))) trimmed += actual[i];
    actual = trimmed;
  }
  if (actual == expected) return;
  // Report the first differing case, not two 2 kB strings.
  const std::vector<std::string> cases = split_token_cases(read_file(shared_path(path + ".inp")));
  size_t line_begin_actual = 0, line_begin_expected = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const size_t end_actual = actual.find('\n', line_begin_actual);
    const size_t end_expected = expected.find('\n', line_begin_expected);
    const std::string line_actual = actual.substr(line_begin_actual, end_actual - line_begin_actual);
    const std::string line_expected = expected.substr(line_begin_expected, end_expected - line_begin_expected);
    ASSERT_EQ(line_actual, line_expected) << "case " << i << ": '" << cases[i] << "'";
    line_begin_actual = end_actual + 1;
    line_begin_expected = end_expected + 1;
  }
  FAIL() << "outputs differ outside the cases (line count or trailing newline)";
}

TEST_P(SharedVocabTest, DecodingEachCaseGivesBackItsText) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string path = vocab_file(GetParam());
  const Tokenizer& tokenizer = shared_tokenizer(path);
  const std::vector<std::string> cases = split_token_cases(read_file(shared_path(path + ".inp")));
  ASSERT_EQ(cases.size(), GetParam() == std::string("qwen35") ? 50u : 46u);  // llama.cpp's test texts
  for (const std::string& text : cases) {
    const std::vector<int32_t> ids = tokenizer.encode(text, false, false);
    EXPECT_EQ(tokenizer.decode(ids, false, /*strip_space_prefix=*/true), text);
    const std::vector<int32_t> with_special = tokenizer.encode(text, true, false);
    EXPECT_EQ(tokenizer.decode(with_special, false, true), text);
  }
}

INSTANTIATE_TEST_SUITE_P(AllSharedVocabularies, SharedVocabTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2", "qwen35", "gemma-4"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = (c == '-') ? '_' : c;
                           return name;
                         });

TEST(SharedVocab, ModelNamesAndSpecialTokens) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& spm = shared_tokenizer(vocab_file("llama-spm"));
  EXPECT_EQ(spm.model_name(), "llama");
  EXPECT_EQ(spm.n_vocab(), 32000);
  EXPECT_EQ(spm.bos_id(), 1);
  EXPECT_EQ(spm.eos_id(), 2);
  EXPECT_TRUE(spm.add_bos());
  EXPECT_FALSE(spm.add_eos());
  EXPECT_TRUE(spm.is_end_of_generation(2));
  EXPECT_FALSE(spm.is_end_of_generation(1));

  const Tokenizer& llama3 = shared_tokenizer(vocab_file("llama-bpe"));
  EXPECT_EQ(llama3.model_name(), "gpt2/llama-bpe");
  EXPECT_EQ(llama3.bos_id(), 128000);
  EXPECT_TRUE(llama3.add_bos());  // implied by the llama-bpe pre-tokenizer when the file is silent
  EXPECT_TRUE(llama3.is_end_of_generation(128001));                         // <|end_of_text|>
  EXPECT_TRUE(llama3.is_end_of_generation(llama3.find_token("<|eot_id|>")));  // end of turn
  EXPECT_FALSE(llama3.is_end_of_generation(-1));
  EXPECT_FALSE(llama3.is_end_of_generation(llama3.find_token("<|start_header_id|>")));

  const Tokenizer& qwen2 = shared_tokenizer(vocab_file("qwen2"));
  EXPECT_EQ(qwen2.model_name(), "gpt2/qwen2");
  EXPECT_FALSE(qwen2.add_bos());
  EXPECT_TRUE(qwen2.is_end_of_generation(151643));                          // <|endoftext|>
  EXPECT_TRUE(qwen2.is_end_of_generation(qwen2.find_token("<|im_end|>")));  // ChatML end of turn
  EXPECT_FALSE(qwen2.is_end_of_generation(qwen2.find_token("<|im_start|>")));

  const Tokenizer& gemma4 = shared_tokenizer(vocab_file("gemma-4"));
  EXPECT_EQ(gemma4.model_name(), "gemma4");
  EXPECT_EQ(gemma4.bos_id(), 2);
  EXPECT_TRUE(gemma4.add_bos());
  EXPECT_TRUE(gemma4.is_end_of_generation(1));                              // <eos>
  EXPECT_TRUE(gemma4.is_end_of_generation(gemma4.find_token("<turn|>")));  // end of turn
  EXPECT_TRUE(gemma4.is_end_of_generation(gemma4.find_token("<|tool_response>")));
  if (const int32_t s_id = gemma4.find_token("</s>"); s_id >= 0) {
    EXPECT_FALSE(gemma4.is_end_of_generation(s_id));
  }
  EXPECT_EQ(gemma4.token_to_piece(gemma4.find_token("\xE2\x96\x81Hello")), " Hello");  // ▁ is a space

  const Tokenizer& phi3 = shared_tokenizer(vocab_file("phi-3"));
  EXPECT_TRUE(phi3.is_end_of_generation(32000));                         // EOS <|endoftext|>
  EXPECT_TRUE(phi3.is_end_of_generation(phi3.find_token("<|end|>")));    // end of turn
  EXPECT_FALSE(phi3.is_end_of_generation(phi3.find_token("<|user|>")));

  const Tokenizer& gpt2 = shared_tokenizer(vocab_file("gpt-2"));
  EXPECT_EQ(gpt2.model_name(), "gpt2/gpt-2");
  EXPECT_EQ(gpt2.eos_id(), 50256);
  EXPECT_TRUE(gpt2.is_end_of_generation(50256));
}

TEST(SharedVocab, SpecialTokensAreParsedOnlyWhenAsked) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& llama3 = shared_tokenizer(vocab_file("llama-bpe"));
  const int32_t eot = llama3.find_token("<|eot_id|>");
  const std::vector<int32_t> parsed = llama3.encode("Hi<|eot_id|>", false, true);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[1], eot);
  const std::vector<int32_t> plain = llama3.encode("Hi<|eot_id|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_EQ(llama3.decode(plain), "Hi<|eot_id|>");
  // Control tokens render as nothing unless asked.
  EXPECT_EQ(llama3.decode(parsed), "Hi");
  EXPECT_EQ(llama3.decode(parsed, /*render_special=*/true), "Hi<|eot_id|>");

  // SPM: text after a special token gets the space prefix again (SentencePiece legacy behaviour).
  const Tokenizer& spm = shared_tokenizer(vocab_file("llama-spm"));
  const std::vector<int32_t> ids = spm.encode("a</s>b", true, true);
  const std::vector<int32_t> expected = {1, 263, 2, 289};  // <s> ▁a </s> ▁b
  EXPECT_EQ(ids, expected);

  // Phi-3 strips the whitespace after its chat markers (RSTRIP), as its chat template expects.
  const Tokenizer& gemma4 = shared_tokenizer(vocab_file("gemma-4"));
  EXPECT_EQ(gemma4.model_name(), "gemma4");
  EXPECT_EQ(gemma4.bos_id(), 2);
  EXPECT_TRUE(gemma4.add_bos());
  EXPECT_TRUE(gemma4.is_end_of_generation(1));                              // <eos>
  EXPECT_TRUE(gemma4.is_end_of_generation(gemma4.find_token("<turn|>")));  // end of turn
  EXPECT_TRUE(gemma4.is_end_of_generation(gemma4.find_token("<|tool_response>")));
  if (const int32_t s_id = gemma4.find_token("</s>"); s_id >= 0) {
    EXPECT_FALSE(gemma4.is_end_of_generation(s_id));
  }
  EXPECT_EQ(gemma4.token_to_piece(gemma4.find_token("\xE2\x96\x81Hello")), " Hello");  // ▁ is a space

  const Tokenizer& phi3 = shared_tokenizer(vocab_file("phi-3"));
  EXPECT_EQ(phi3.encode("<|user|>\nHello", false, true), phi3.encode("<|user|>Hello", false, true));

  // USER_DEFINED tokens (Qwen2's [PAD...]) are ordinary added words: matched even without parse_special.
  const Tokenizer& qwen2 = shared_tokenizer(vocab_file("qwen2"));
  const std::vector<int32_t> pad = qwen2.encode("x[PAD151646]y", false, false);
  ASSERT_EQ(pad.size(), 3u);
  EXPECT_EQ(pad[1], 151646);
  EXPECT_EQ(qwen2.decode(pad), "x[PAD151646]y");
}

// Where the shared models live: stories260K at the top, the small test models under test/.
std::string model_path(const std::string& file_name) {
  const std::string top = "models/" + file_name;
  return std::ifstream(shared_path(top)).good() ? top : "models/test/" + file_name;
}

TEST(ReferencePrompts, MatchLlamaCppPromptTokensAndDecodedText) {
  NUCLEUS_REQUIRE_SHARED();
  const std::vector<std::string> references = {"stories260K", "llama-spm-f32", "llama-spm-f16", "llama-spm-q8_0",
                                               "llama-spm-q4_0", "llama3-f16", "qwen2-f16"};
  int n_prompts = 0;
  for (const std::string& reference : references) {
    SCOPED_TRACE(reference);
    const nlohmann::json json = nlohmann::json::parse(read_file(shared_path("reference/" + reference + ".json")));
    const Tokenizer& tokenizer = shared_tokenizer(model_path(json.at("model").get<std::string>()));
    for (const nlohmann::json& item : json.at("cases")) {
      const std::string prompt = item.at("prompt").get<std::string>();
      const std::vector<int32_t> expected = item.at("prompt_tokens").get<std::vector<int32_t>>();
      EXPECT_EQ(tokenizer.encode(prompt, /*add_special=*/true, /*parse_special=*/true), expected) << "prompt '" << prompt << "'";
      EXPECT_EQ(tokenizer.decode(expected, false, true), prompt);
      // The reference text is llama.cpp's detokenization of the generated tokens.
      std::vector<int32_t> generated;
      for (const nlohmann::json& step : item.at("steps")) generated.push_back(step.at("token").get<int32_t>());
      EXPECT_EQ(tokenizer.decode(generated), item.at("text").get<std::string>()) << "prompt '" << prompt << "'";
      ++n_prompts;
    }
  }
  EXPECT_GE(n_prompts, 25);
}

TEST(ReferencePrompts, Stories260KTokenizerFromModelFile) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = shared_tokenizer("models/stories260K.gguf");
  EXPECT_EQ(tokenizer.n_vocab(), 512);
  EXPECT_TRUE(tokenizer.add_bos());  // absent from the file: SentencePiece default
  EXPECT_EQ(tokenizer.encode("", true, false), std::vector<int32_t>{1});
  EXPECT_TRUE(tokenizer.encode("", false, false).empty());
}

}  // namespace
}  // namespace nucleus
