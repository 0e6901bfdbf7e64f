// Property tests over seeded random UTF-8 text: for every shared vocabulary, decoding what encode()
// produced gives back the input exactly, and streaming detokenization equals the one-shot decode.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace nucleus {
namespace {

const Tokenizer& shared_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) slot = Tokenizer::from_gguf(*GgufFile::open(test::shared_path("vocab/ggml-vocab-" + name + ".gguf")));
  return *slot;
}

std::string hex_dump(const std::string& text) {
  std::string out;
  char buffer[4];
  for (unsigned char c : text) {
    std::snprintf(buffer, sizeof buffer, "%02X ", c);
    out += buffer;
  }
  return out;
}

// Random text built from the pieces tokenizers find hard: code points from every plane, combining
// marks, whitespace runs (including Unicode spaces), digit runs in several scripts, emoji ZWJ
// sequences, ASCII words with contractions and punctuation, CJK.
class RandomText {
 public:
  explicit RandomText(uint32_t seed) : rng_(seed) {}

  std::string next() {
    std::string text;
    const uint32_t n_parts = uniform(1, 24);
    for (uint32_t i = 0; i < n_parts; ++i) {
      switch (uniform(0, 7)) {
        case 0: any_codepoints(text); break;
        case 1: combining_sequence(text); break;
        case 2: whitespace_run(text); break;
        case 3: digit_run(text); break;
        case 4: emoji_sequence(text); break;
        case 5: cjk(text); break;
        default: ascii_words(text); break;
      }
    }
    return text;
  }

 private:
  uint32_t uniform(uint32_t low, uint32_t high) { return std::uniform_int_distribution<uint32_t>(low, high)(rng_); }
  template <size_t N>
  uint32_t pick(const uint32_t (&choices)[N]) { return choices[uniform(0, N - 1)]; }
  static void put(uint32_t codepoint, std::string& out) { unicode::append_utf8(codepoint, out); }

  void any_codepoints(std::string& out) {
    for (uint32_t n = uniform(1, 6); n > 0; --n) {
      uint32_t codepoint;
      switch (uniform(0, 3)) {
        case 0: codepoint = uniform(0, 0x7F); break;       // ASCII, controls included
        case 1: codepoint = uniform(0x80, 0x7FF); break;   // 2-byte
        case 2: codepoint = uniform(0x800, 0xFFFF); break; // BMP
        default: codepoint = uniform(0x10000, 0x10FFFF); break;  // planes 1..16
      }
      if (codepoint >= 0xD800 && codepoint <= 0xDFFF) codepoint = 0xFFFD;  // surrogates are not UTF-8
      // U+2581 is SentencePiece's stand-in for space: SPM decodes it as ' ', so it cannot round-trip.
      if (codepoint == 0x2581) codepoint = 0x2580;
      put(codepoint, out);
    }
  }
  void combining_sequence(std::string& out) {
    static const uint32_t kBases[] = {'a', 'e', 'o', 'A', 'n', 0x3B1 /* α */, 0x430 /* а */, 0x915 /* क */, 0xE01 /* ก */};
    put(pick(kBases), out);
    for (uint32_t n = uniform(1, 4); n > 0; --n) {
      static const uint32_t kMarkBlocks[] = {0x300, 0x483, 0x93C, 0xE31, 0x20D0, 0x1AB0};
      put(pick(kMarkBlocks) + uniform(0, 10), out);
    }
  }
  void whitespace_run(std::string& out) {
    static const uint32_t kSpaces[] = {' ', ' ', ' ', '\t', '\n', '\n', '\r', 0x0B, 0x0C, 0x85, 0xA0, 0x1680, 0x2003, 0x2028, 0x2029, 0x202F, 0x3000};
    for (uint32_t n = uniform(1, 8); n > 0; --n) put(pick(kSpaces), out);
  }
  void digit_run(std::string& out) {
    static const uint32_t kZeros[] = {'0', '0', '0', 0x660 /* Arabic-Indic */, 0x966 /* Devanagari */, 0xFF10 /* fullwidth */};
    const uint32_t zero = pick(kZeros);
    for (uint32_t n = uniform(1, 12); n > 0; --n) put(zero + uniform(0, 9), out);
  }
  void emoji_sequence(std::string& out) {
    static const uint32_t kPeople[] = {0x1F468, 0x1F469, 0x1F467, 0x1F466, 0x1F9D1};
    switch (uniform(0, 3)) {
      case 0:  // family: person ZWJ person ZWJ ...
        for (uint32_t n = uniform(2, 4); n > 0; --n) {
          put(pick(kPeople), out);
          if (n > 1) put(0x200D, out);
        }
        break;
      case 1:  // skin tone + profession: 👩🏽‍💻
        put(pick(kPeople), out);
        put(0x1F3FB + uniform(0, 4), out);
        put(0x200D, out);
        put(0x1F4BB, out);
        break;
      case 2:  // flag: two regional indicators
        put(0x1F1E6 + uniform(0, 25), out);
        put(0x1F1E6 + uniform(0, 25), out);
        break;
      default:  // keycap: digit, VS16, combining enclosing keycap
        put('0' + uniform(0, 9), out);
        put(0xFE0F, out);
        put(0x20E3, out);
        break;
    }
  }
  void cjk(std::string& out) {
    for (uint32_t n = uniform(1, 6); n > 0; --n) {
      static const uint32_t kBlocks[] = {0x4E00, 0x3040 /* hiragana */, 0xAC00 /* hangul */, 0x20000 /* ext B */};
      put(pick(kBlocks) + uniform(0, 80), out);
    }
  }
  void ascii_words(std::string& out) {
    static const char* const kWords[] = {"the", "The", "don't", "I'LL", "we've", "it's", "Hello", "world", "x", "foo_bar",
                                         "camelCase", "HTTPServer", "...", "!!", "?", "(", ")", "{}", "->", "==",
                                         "\"quoted\"", "'", "'s", "--", "#include", "<s>", "a.b", "$", "%", "@"};
    for (uint32_t n = uniform(1, 5); n > 0; --n) {
      if (uniform(0, 2) != 0) out += ' ';
      out += kWords[uniform(0, sizeof kWords / sizeof kWords[0] - 1)];
    }
  }

  std::mt19937 rng_;
};

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, DecodeOfEncodeIsIdentityOnRandomUtf8) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = shared_tokenizer(GetParam());
  RandomText random(20240601u + static_cast<uint32_t>(GetParam().size()));
  for (int i = 0; i < 400; ++i) {
    const std::string text = random.next();
    ASSERT_TRUE(unicode::is_valid_utf8(text));
    const std::vector<int32_t> ids = tokenizer.encode(text, false, false);
    ASSERT_EQ(tokenizer.decode(ids, false, /*strip_space_prefix=*/true), text) << "input bytes: " << hex_dump(text);
    const std::vector<int32_t> with_special = tokenizer.encode(text, true, false);
    ASSERT_EQ(tokenizer.decode(with_special, false, true), text) << "input bytes: " << hex_dump(text);
  }
}

TEST_P(RoundTripTest, StreamingDetokenizerEqualsOneShotDecodeAndNeverSplitsACharacter) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = shared_tokenizer(GetParam());
  RandomText random(777u + static_cast<uint32_t>(GetParam().size()));
  for (int i = 0; i < 200; ++i) {
    const std::string text = random.next();
    const std::vector<int32_t> ids = tokenizer.encode(text, true, false);
    IncrementalDetokenizer stream(tokenizer);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string chunk = stream.push(id);
      // The whole stream is valid UTF-8, so every released chunk must be too.
      ASSERT_TRUE(unicode::is_valid_utf8(chunk)) << "chunk bytes: " << hex_dump(chunk);
      streamed += chunk;
    }
    streamed += stream.flush();
    ASSERT_EQ(streamed, tokenizer.decode(ids)) << "input bytes: " << hex_dump(text);
  }
}

// Arbitrary id sequences (as a random-weight model emits them) may form invalid UTF-8: the stream
// must still equal the one-shot decode, byte for byte.
TEST_P(RoundTripTest, StreamingDetokenizerOnRandomIds) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = shared_tokenizer(GetParam());
  std::mt19937 rng(99);
  std::uniform_int_distribution<int32_t> any_id(0, tokenizer.n_vocab() - 1);
  for (int i = 0; i < 100; ++i) {
    std::vector<int32_t> ids(1 + i % 30);
    for (int32_t& id : ids) id = any_id(rng);
    for (bool render_special : {false, true}) {
      IncrementalDetokenizer stream(tokenizer, render_special);
      std::string streamed;
      for (int32_t id : ids) streamed += stream.push(id);
      streamed += stream.flush();
      ASSERT_EQ(streamed, tokenizer.decode(ids, render_special));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllSharedVocabularies, RoundTripTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = (c == '-') ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace nucleus
