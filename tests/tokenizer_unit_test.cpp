// The tokenizer's building blocks on their own: UTF-8 helpers and the byte-level alphabet, the
// pre-tokenizer families, special-token splitting, the test-case file format.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace nucleus {
namespace {

using Pieces = std::vector<std::string>;

TEST(Unicode, StrictUtf8Validation) {
  EXPECT_TRUE(unicode::is_valid_utf8(""));
  EXPECT_TRUE(unicode::is_valid_utf8("plain ascii"));
  EXPECT_TRUE(unicode::is_valid_utf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x9A\x80"));  // é € 🚀
  EXPECT_TRUE(unicode::is_valid_utf8("\xF4\x8F\xBF\xBF"));                      // U+10FFFF
  EXPECT_FALSE(unicode::is_valid_utf8("\xC0\x80"));                             // overlong NUL
  EXPECT_FALSE(unicode::is_valid_utf8("\xE0\x80\xAF"));                         // overlong '/'
  EXPECT_FALSE(unicode::is_valid_utf8("\xED\xA0\x80"));                         // surrogate U+D800
  EXPECT_FALSE(unicode::is_valid_utf8("\xF4\x90\x80\x80"));                     // above U+10FFFF
  EXPECT_FALSE(unicode::is_valid_utf8("\xE2\x82"));                             // truncated
  EXPECT_FALSE(unicode::is_valid_utf8("\x80"));                                 // lone continuation
  EXPECT_FALSE(unicode::is_valid_utf8("\xFF"));
}

TEST(Unicode, CompletePrefixHoldsBackOnlyUnfinishedCharacters) {
  EXPECT_EQ(unicode::complete_utf8_prefix_length(""), 0u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("ab"), 2u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\xE2"), 1u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\xE2\x82"), 1u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\xE2\x82\xAC"), 4u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("\xF0\x9F\x9A"), 0u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("\xF0\x9F\x9A\x80"), 4u);
  // Never-valid bytes are released: holding them would stall a stream forever.
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\xFF"), 2u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\x80"), 2u);
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\xC0"), 2u);      // C0 only starts overlongs
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\xE0\x80"), 3u);  // E0 80 is overlong
  EXPECT_EQ(unicode::complete_utf8_prefix_length("a\xED\xA0"), 3u);  // surrogate
  EXPECT_EQ(unicode::complete_utf8_prefix_length("\x80\x80\x80\x80"), 4u);
}

TEST(Unicode, NextCodepointDecodesAndSkipsInvalidBytes) {
  const std::string text = "a\xC3\xA9\xFF\xF0\x9F\x98\x80";
  size_t pos = 0;
  uint32_t codepoint = 0;
  EXPECT_TRUE(unicode::next_codepoint(text, pos, codepoint));
  EXPECT_EQ(codepoint, 'a');
  EXPECT_TRUE(unicode::next_codepoint(text, pos, codepoint));
  EXPECT_EQ(codepoint, 0xE9u);
  EXPECT_FALSE(unicode::next_codepoint(text, pos, codepoint));
  EXPECT_EQ(pos, 4u);
  EXPECT_TRUE(unicode::next_codepoint(text, pos, codepoint));
  EXPECT_EQ(codepoint, 0x1F600u);
  EXPECT_EQ(pos, text.size());
}

TEST(Unicode, ByteLevelAlphabetIsABijection) {
  EXPECT_EQ(unicode::byte_to_codepoint(' '), 0x120u);   // Ġ
  EXPECT_EQ(unicode::byte_to_codepoint('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(unicode::byte_to_codepoint('!'), static_cast<uint32_t>('!'));
  EXPECT_EQ(unicode::byte_to_codepoint(0xAD), 0x143u);  // soft hyphen: the last remapped byte
  EXPECT_EQ(unicode::byte_to_codepoint(0xFF), 0xFFu);
  for (int byte = 0; byte < 256; ++byte) {
    EXPECT_EQ(unicode::codepoint_to_byte(unicode::byte_to_codepoint(static_cast<uint8_t>(byte))), byte);
  }
  EXPECT_EQ(unicode::codepoint_to_byte(' '), -1);  // space itself is not in the alphabet
  EXPECT_EQ(unicode::codepoint_to_byte(0x144), -1);
  EXPECT_EQ(unicode::codepoint_to_byte(0x4E00), -1);
}

Pieces split_words(const std::string& pre, const std::string& text) {
  std::vector<std::string_view> words;
  PreTokenizer(pre).split(text, words);
  return Pieces(words.begin(), words.end());
}

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split_words("gpt-2", "Hello world's  test\n\n x"),
            (Pieces{"Hello", " world", "'s", " ", " test", "\n\n", " x"}));
  EXPECT_EQ(split_words("gpt-2", "I'LL pay $100!!"), (Pieces{"I", "'", "LL", " pay", " $", "100", "!!"}));
  // Invalid UTF-8 never matches; it stays in a gap of its own.
  EXPECT_EQ(split_words("gpt-2", "ab\xFF" "cd"), (Pieces{"ab", "\xFF", "cd"}));
}

TEST(PreTokenizer, WhitespaceIncludesNextLine) {
  // U+0085 is White_Space (Hugging Face, llama.cpp); PCRE2's own \s would group it with " ".
  EXPECT_EQ(split_words("gpt-2", " \xC2\x85x"), (Pieces{" ", "\xC2\x85", "x"}));
}

TEST(PreTokenizer, Llama3AndQwen2Digits) {
  EXPECT_EQ(split_words("llama-bpe", "12345 abc"), (Pieces{"123", "45", " abc"}));
  EXPECT_EQ(split_words("qwen2", "12345 abc"), (Pieces{"1", "2", "3", "4", "5", " abc"}));
  EXPECT_EQ(split_words("llama-bpe", "x\n\ny's"), (Pieces{"x", "\n\n", "y", "'s"}));
  EXPECT_EQ(split_words("llama-bpe", "x  \n  y"), (Pieces{"x", "  \n", " ", " y"}));
  EXPECT_EQ(split_words("llama-bpe", "don'T ...\n"), (Pieces{"don", "'T", " ...\n"}));
}

TEST(PreTokenizer, FamiliesWithSeveralPatterns) {
  // starcoder: digits are cut apart first, then the GPT-2 pattern runs on each piece.
  EXPECT_EQ(split_words("starcoder", "abc123 x"), (Pieces{"abc", "1", "2", "3", " x"}));
  // deepseek-coder: newlines, letter runs, punctuation runs, CJK, digits.
  EXPECT_EQ(split_words("deepseek-coder", "ab,c\n12"), (Pieces{"ab", ",", "c", "\n", "1", "2"}));
  // gpt-4o: case changes split words, contractions stay attached.
  EXPECT_EQ(split_words("gpt-4o", "camelCase HTTPServer it's"), (Pieces{"camel", "Case", " HTTPServer", " it's"}));
}

TEST(PreTokenizer, EveryFamilyCoversItsInput) {
  const std::string text =
      "Hello, World! It's 2024-06-01; x=3.14159 \t\n\n  indented\r\n"
      "\xE6\x88\x91\xE4\xBB\xAC\xE5\x8E\xBB \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xCE\xB1\xCE\xB2 "
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB \xD9\xA3\xD9\xA4 \xC2\xA0" "end  ";
  for (const std::string& name : PreTokenizer::known_names()) {
    SCOPED_TRACE(name);
    const Pieces words = split_words(name, text);
    std::string joined;
    for (const std::string& word : words) {
      EXPECT_FALSE(word.empty());
      joined += word;
    }
    EXPECT_EQ(joined, text);
    if (name == "gemma4") {
      EXPECT_EQ(words.size(), 5u);  // lines and runs of newlines only: "…\t", "\n\n", "  indented\r", "\n", "…end  "
    } else {
      EXPECT_GT(words.size(), 10u);
    }
  }
}

TEST(PreTokenizer, UnknownNameIsAnErrorNamingIt) {
  try {
    PreTokenizer("no-such-family");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'no-such-family'"), std::string::npos);
  }
  for (const char* required : {"gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "mpt",
                               "starcoder", "refact", "command-r", "smollm", "olmo", "gpt-4o", "default"}) {
    EXPECT_NO_THROW(PreTokenizer{required}) << required;
  }
}

// A vocabulary with only what split_special_tokens reads.
Vocab special_vocab() {
  Vocab vocab;
  vocab.texts = {"a", "<ctl>", "<ctl><x>", "[USER]", "<strip>"};
  vocab.attributes = {kAttrNormal, kAttrControl, kAttrControl, kAttrUserDefined, kAttrControl | kAttrLstrip | kAttrRstrip};
  vocab.special_token_ids = {2, 1, 3, 4};  // longest first
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) vocab.ids.emplace(vocab.texts[id], id);
  return vocab;
}

std::vector<std::string> describe(const std::string& text, const std::vector<TextFragment>& fragments) {
  std::vector<std::string> out;
  for (const TextFragment& fragment : fragments) {
    if (fragment.is_token()) {
      out.push_back(std::string(1, '#').append(std::to_string(fragment.token_id)));
    } else {
      out.push_back(text.substr(fragment.offset, fragment.length));
    }
  }
  return out;
}

TEST(SpecialTokens, ControlTokensOnlyWithParseSpecialUserDefinedAlways) {
  const Vocab vocab = special_vocab();
  const std::string text = "x<ctl>y[USER]z";
  EXPECT_EQ(describe(text, split_special_tokens(vocab, text, true)), (Pieces{"x", "#1", "y", "#3", "z"}));
  EXPECT_EQ(describe(text, split_special_tokens(vocab, text, false)), (Pieces{"x<ctl>y", "#3", "z"}));
  EXPECT_TRUE(split_special_tokens(vocab, "", true).empty());
}

TEST(SpecialTokens, LongerTokensWinAndStripRulesApply) {
  const Vocab vocab = special_vocab();
  const std::string text = "<ctl><x><ctl>";
  EXPECT_EQ(describe(text, split_special_tokens(vocab, text, true)), (Pieces{"#2", "#1"}));
  const std::string spaced = "a  <strip>\n b";
  EXPECT_EQ(describe(spaced, split_special_tokens(vocab, spaced, true)), (Pieces{"a", "#4", "b"}));
}

TEST(TokenCases, SplitFollowsTheInpLayout) {
  EXPECT_EQ(split_token_cases("a\n__ggml_vocab_test__\n\n__ggml_vocab_test__\n"), (Pieces{"a", ""}));
  EXPECT_EQ(split_token_cases("\n\n__ggml_vocab_test__\n"), (Pieces{"\n"}));
  EXPECT_EQ(split_token_cases("last without terminator"), (Pieces{"last without terminator"}));
  EXPECT_TRUE(split_token_cases("").empty());
}

}  // namespace
}  // namespace nucleus
