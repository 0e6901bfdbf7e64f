// Tokenizers built from tiny GGUF images made in memory: exact merge-order rules on hand-made
// vocabularies, and a clear load error for each kind of malformed tokenizer metadata.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace nucleus {
namespace {

constexpr const char* kFileName = "synthetic.gguf";

// The tokenizer.ggml.* keys of a test vocabulary; an empty/absent field leaves its key out.
struct VocabSpec {
  std::optional<std::string> model = "llama";
  std::optional<std::string> pre;
  std::optional<MetaValue> tokens;  // overrides token_texts (for wrongly typed arrays)
  std::vector<std::string> token_texts;
  std::vector<float> scores;
  std::optional<MetaValue> types;  // overrides token_types
  std::vector<int32_t> token_types;
  std::optional<std::vector<std::string>> merges;
  std::vector<std::pair<std::string, MetaValue>> extra;

  std::vector<uint8_t> image() const {
    GgufWriter writer;
    writer.set("general.architecture", MetaValue::string("llama"));
    if (model) writer.set("tokenizer.ggml.model", MetaValue::string(*model));
    if (pre) writer.set("tokenizer.ggml.pre", MetaValue::string(*pre));
    writer.set("tokenizer.ggml.tokens", tokens ? *tokens : MetaValue::string_array(token_texts));
    if (!scores.empty()) writer.set("tokenizer.ggml.scores", MetaValue::f32_array(scores));
    if (types) {
      writer.set("tokenizer.ggml.token_type", *types);
    } else if (!token_types.empty()) {
      writer.set("tokenizer.ggml.token_type", MetaValue::i32_array(token_types));
    }
    if (merges) writer.set("tokenizer.ggml.merges", MetaValue::string_array(*merges));
    for (const auto& [key, value] : extra) writer.set(key, value);
    return writer.to_bytes();
  }
  std::unique_ptr<GgufFile> build() const { return GgufFile::from_bytes(image(), kFileName); }
  std::unique_ptr<Tokenizer> load(const TokenizerOptions& options = {}) const {
    return Tokenizer::from_gguf(*build(), options);
  }
};

// SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens (ids 3..258), then `pieces` with
// their scores (ids from 259).
constexpr int32_t kFirstPiece = 259;
VocabSpec spm_spec(const std::vector<std::pair<std::string, float>>& pieces) {
  VocabSpec spec;
  spec.token_texts = {"<unk>", "<s>", "</s>"};
  spec.token_types = {2, 3, 3};
  for (int byte = 0; byte < 256; ++byte) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", byte);
    spec.token_texts.push_back(text);
    spec.token_types.push_back(6);
  }
  spec.scores.assign(spec.token_texts.size(), 0.0f);
  for (const auto& [text, score] : pieces) {
    spec.token_texts.push_back(text);
    spec.token_types.push_back(1);
    spec.scores.push_back(score);
  }
  return spec;
}

// Byte-level BPE vocabulary: the 256 alphabet characters in byte order (so byte b is token b), then
// `extra` tokens (ids from 256), with `merges` in priority order.
VocabSpec bpe_spec(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                   const std::string& pre = "gpt-2") {
  VocabSpec spec;
  spec.model = "gpt2";
  spec.pre = pre;
  for (int byte = 0; byte < 256; ++byte) {
    std::string character;
    unicode::append_utf8(unicode::byte_to_codepoint(static_cast<uint8_t>(byte)), character);
    spec.token_texts.push_back(character);
  }
  spec.token_texts.insert(spec.token_texts.end(), extra.begin(), extra.end());
  spec.merges = merges;
  return spec;
}

int32_t byte_id(uint8_t byte) { return 3 + byte; }  // SPM <0xXX>

// ---------------------------------------------------------------------------------------------
// SentencePiece merge rules

TEST(SyntheticSpm, HighestScoringPairMergesFirst) {
  VocabSpec spec = spm_spec({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -1.5f}});
  spec.extra.push_back({"tokenizer.ggml.add_space_prefix", MetaValue::boolean(false)});
  const auto tokenizer = spec.load();
  // "bc" (-1.5) beats "ab" (-2): a | bc.
  EXPECT_EQ(tokenizer->encode("abc", false, false), (std::vector<int32_t>{kFirstPiece, kFirstPiece + 4}));

  VocabSpec flipped = spm_spec({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -1}, {"bc", -1.5f}});
  flipped.extra = spec.extra;
  EXPECT_EQ(flipped.load()->encode("abc", false, false), (std::vector<int32_t>{kFirstPiece + 3, kFirstPiece + 2}));
}

TEST(SyntheticSpm, EqualScoresMergeLeftmostFirst) {
  VocabSpec spec = spm_spec({{"a", -1}, {"aa", -1}});
  spec.extra.push_back({"tokenizer.ggml.add_space_prefix", MetaValue::boolean(false)});
  EXPECT_EQ(spec.load()->encode("aaa", false, false), (std::vector<int32_t>{kFirstPiece + 1, kFirstPiece}));
}

TEST(SyntheticSpm, SpacePrefixAndSpaceMarker) {
  const auto tokenizer = spm_spec({{"\xE2\x96\x81", -1}, {"a", -1}, {"\xE2\x96\x81" "a", -0.5f}}).load();
  const int32_t space = kFirstPiece, a = kFirstPiece + 1, space_a = kFirstPiece + 2;
  EXPECT_EQ(tokenizer->encode("a a", false, false), (std::vector<int32_t>{space_a, space_a}));
  EXPECT_EQ(tokenizer->encode("a", true, false), (std::vector<int32_t>{1, space_a}));
  EXPECT_EQ(tokenizer->encode("  a", false, false), (std::vector<int32_t>{space, space, space_a}));
  EXPECT_TRUE(tokenizer->encode("", false, false).empty());
  EXPECT_EQ(tokenizer->token_to_piece(space_a), " a");
  EXPECT_EQ(tokenizer->decode({1, space_a, a}), " aa");
  EXPECT_EQ(tokenizer->decode({1, space_a, a}, false, /*strip_space_prefix=*/true), "aa");
  EXPECT_EQ(tokenizer->decode({space_a, a}, false, true), "aa");
}

TEST(SyntheticSpm, UnknownCharactersFallBackToByteTokens) {
  VocabSpec spec = spm_spec({{"a", -1}});
  spec.extra.push_back({"tokenizer.ggml.add_space_prefix", MetaValue::boolean(false)});
  const auto tokenizer = spec.load();
  const std::vector<int32_t> ids = tokenizer->encode("a\xC3\xA9", false, false);  // "aé"
  EXPECT_EQ(ids, (std::vector<int32_t>{kFirstPiece, byte_id(0xC3), byte_id(0xA9)}));
  EXPECT_EQ(tokenizer->decode(ids), "a\xC3\xA9");
  // Invalid UTF-8 input survives byte for byte.
  const std::string invalid = "\xFF" "a\xC3";
  EXPECT_EQ(tokenizer->decode(tokenizer->encode(invalid, false, false)), invalid);
}

TEST(SyntheticSpm, ControlAndUnknownTokensRenderOnlyOnRequest) {
  const auto tokenizer = spm_spec({{"a", -1}}).load();
  EXPECT_EQ(tokenizer->token_to_piece(0), "");
  EXPECT_EQ(tokenizer->token_to_piece(0, true), "<unk>");
  EXPECT_EQ(tokenizer->token_to_piece(1), "");
  EXPECT_EQ(tokenizer->token_to_piece(1, true), "<s>");
  EXPECT_EQ(tokenizer->token_to_piece(byte_id('\n')), "\n");
  EXPECT_EQ(tokenizer->token_text(byte_id('\n')), "<0x0A>");
  EXPECT_THROW(tokenizer->token_to_piece(-1), Error);
  EXPECT_THROW(tokenizer->token_to_piece(tokenizer->n_vocab()), Error);
  EXPECT_THROW(tokenizer->decode({0, 100000}), Error);
}

TEST(SyntheticSpm, AddBosAndEosFollowMetadata) {
  VocabSpec spec = spm_spec({{"a", -1}, {"\xE2\x96\x81" "a", -1}});
  spec.extra.push_back({"tokenizer.ggml.add_bos_token", MetaValue::boolean(false)});
  spec.extra.push_back({"tokenizer.ggml.add_eos_token", MetaValue::boolean(true)});
  const auto tokenizer = spec.load();
  EXPECT_FALSE(tokenizer->add_bos());
  EXPECT_TRUE(tokenizer->add_eos());
  EXPECT_EQ(tokenizer->encode("a", true, false), (std::vector<int32_t>{kFirstPiece + 1, 2}));
}

TEST(SyntheticSpm, StreamingHoldsBackSplitCharacters) {
  const auto tokenizer = spm_spec({{"a", -1}}).load();
  IncrementalDetokenizer stream(*tokenizer);
  EXPECT_EQ(stream.push(kFirstPiece), "a");
  EXPECT_EQ(stream.push(byte_id(0xE2)), "");  // € = E2 82 AC
  EXPECT_EQ(stream.push(byte_id(0x82)), "");
  EXPECT_EQ(stream.push(byte_id(0xAC)), "\xE2\x82\xAC");
  EXPECT_EQ(stream.push(byte_id(0xFF)), "\xFF");  // can never become valid: released at once
  EXPECT_EQ(stream.push(byte_id(0xF0)), "");
  EXPECT_EQ(stream.flush(), "\xF0");  // the end of the stream releases an unfinished character
  EXPECT_EQ(stream.flush(), "");
}

// ---------------------------------------------------------------------------------------------
// Byte-level BPE merge rules

TEST(SyntheticBpe, LowestRankMergesFirst) {
  const auto bc_first = bpe_spec({"ab", "bc"}, {"b c", "a b"}).load();
  EXPECT_EQ(bc_first->encode("abc", false, false), (std::vector<int32_t>{'a', 257}));
  const auto ab_first = bpe_spec({"ab", "bc"}, {"a b", "b c"}).load();
  EXPECT_EQ(ab_first->encode("abc", false, false), (std::vector<int32_t>{256, 'c'}));
}

TEST(SyntheticBpe, EqualRanksMergeLeftmostFirstAndMergesChain) {
  const auto tokenizer = bpe_spec({"aa", "aaa", "aaaa"}, {"a a", "aa a", "aa aa"}).load();
  EXPECT_EQ(tokenizer->encode("aaa", false, false), (std::vector<int32_t>{257}));          // (aa)a → aaa
  EXPECT_EQ(tokenizer->encode("aaaa", false, false), (std::vector<int32_t>{258}));         // (aa)(aa) → aaaa
  // (aa)(aa)a: "aa a" (rank 1) comes before "aa aa" (rank 2), so the tail grows first: aa|aaa.
  EXPECT_EQ(tokenizer->encode("aaaaa", false, false), (std::vector<int32_t>{256, 257}));
}

TEST(SyntheticBpe, MergesNeverCrossPreTokenizerWords) {
  // "Ġ" is the alphabet character of the space byte.
  const auto tokenizer = bpe_spec({"Ġa", "aĠ"}, {"a Ġ", "Ġ a"}).load();
  // gpt-2 splits "a a" into "a" and " a": the higher-priority "a Ġ" cannot apply across the words.
  EXPECT_EQ(tokenizer->encode("a a", false, false), (std::vector<int32_t>{'a', 256}));
  EXPECT_EQ(tokenizer->decode({'a', 256}), "a a");
  EXPECT_EQ(tokenizer->token_text(256), "Ġa");
}

TEST(SyntheticBpe, IgnoreMergesEmitsWholeWordTokens) {
  // "abc" is a token that the merges cannot build.
  const auto llama3 = bpe_spec({"abc"}, {}, "llama-bpe").load();
  EXPECT_EQ(llama3->encode("abc", false, false), (std::vector<int32_t>{256}));
  const auto gpt2 = bpe_spec({"abc"}, {}, "gpt-2").load();
  EXPECT_EQ(gpt2->encode("abc", false, false), (std::vector<int32_t>{'a', 'b', 'c'}));
}

TEST(SyntheticBpe, EveryByteRoundTrips) {
  const auto tokenizer = bpe_spec({}, {}).load();
  std::string all_bytes;
  for (int byte = 0; byte < 256; ++byte) all_bytes.push_back(static_cast<char>(byte));
  const std::vector<int32_t> ids = tokenizer->encode(all_bytes, false, false);
  EXPECT_EQ(ids.size(), 256u);
  EXPECT_EQ(tokenizer->decode(ids), all_bytes);  // invalid UTF-8 included
}

TEST(SyntheticBpe, PreTokenizerChoiceAndOverride) {
  EXPECT_EQ(bpe_spec({}, {}, "qwen2").load()->model_name(), "gpt2/qwen2");
  VocabSpec no_pre = bpe_spec({}, {});
  no_pre.pre.reset();
  EXPECT_EQ(no_pre.load()->model_name(), "gpt2/default");  // llama.cpp's fallback for old files

  const VocabSpec unknown = bpe_spec({}, {}, "mystery-tokenizer");
  try {
    unknown.load();
    FAIL() << "an unknown pre-tokenizer must not load";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(kFileName), std::string::npos) << message;
    EXPECT_NE(message.find("'mystery-tokenizer'"), std::string::npos) << message;
    EXPECT_NE(message.find("--tokenizer-pre"), std::string::npos) << message;
  }
  TokenizerOptions options;
  options.pre_override = "llama-bpe";
  EXPECT_EQ(unknown.load(options)->model_name(), "gpt2/llama-bpe");
  options.pre_override = "not-a-family";
  EXPECT_THROW(unknown.load(options), Error);
}

TEST(SyntheticBpe, LongRunsDoNotExhaustTheRegexEngine) {
  for (const char* pre : {"gpt-2", "llama-bpe", "qwen2", "gpt-4o", "tekken", "deepseek-llm", "default"}) {
    SCOPED_TRACE(pre);
    const auto tokenizer = bpe_spec({}, {}, pre).load();
    for (const std::string& text : {std::string(200000, ' '), std::string(200000, 'x'), std::string(100000, '\n') + "x",
                                    std::string(50000, '!') + std::string(50000, ' ') + "end"}) {
      EXPECT_EQ(tokenizer->decode(tokenizer->encode(text, false, false)), text);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed metadata: each problem is a clear Error naming the file.

void expect_load_error(const VocabSpec& spec, const std::string& expected_fragment) {
  try {
    spec.load();
    ADD_FAILURE() << "expected an error containing '" << expected_fragment << "'";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(kFileName), std::string::npos) << message;
    EXPECT_NE(message.find(expected_fragment), std::string::npos) << message;
  }
}

TEST(MalformedTokenizerMetadata, VocabularyProblems) {
  VocabSpec empty = spm_spec({});
  empty.token_texts.clear();
  empty.token_types.clear();
  empty.scores.clear();
  expect_load_error(empty, "tokenizer.ggml.tokens is empty");

  VocabSpec not_strings = spm_spec({});
  not_strings.tokens = MetaValue::i32_array({1, 2, 3});
  expect_load_error(not_strings, "tokenizer.ggml.tokens is not an array of strings");

  VocabSpec invalid_utf8 = spm_spec({{"ok", -1}, {"bad\xC3(", -1}});
  expect_load_error(invalid_utf8, "token 260 of tokenizer.ggml.tokens is not valid UTF-8");

  VocabSpec duplicate = spm_spec({{"same", -1}, {"same", -2}});
  expect_load_error(duplicate, "token 'same' appears twice");

  VocabSpec no_model = spm_spec({});
  no_model.model.reset();
  expect_load_error(no_model, "missing tokenizer.ggml.model");

  VocabSpec unknown_model = spm_spec({});
  unknown_model.model = "wordpiece-ish";
  expect_load_error(unknown_model, "unsupported tokenizer.ggml.model 'wordpiece-ish'");
}

TEST(MalformedTokenizerMetadata, TokenTypeProblems) {
  VocabSpec missing = spm_spec({{"a", -1}});
  missing.token_types.clear();
  expect_load_error(missing, "missing tokenizer.ggml.token_type");

  VocabSpec too_short = spm_spec({{"a", -1}});
  too_short.token_types.resize(10);
  expect_load_error(too_short, "tokenizer.ggml.token_type has 10 entries but the vocabulary has 260 tokens");

  VocabSpec strings = spm_spec({{"a", -1}});
  strings.types = MetaValue::string_array(std::vector<std::string>(260, "1"));
  expect_load_error(strings, "tokenizer.ggml.token_type is an array of");

  VocabSpec unknown_type = spm_spec({{"a", -1}});
  unknown_type.token_types.back() = 42;
  expect_load_error(unknown_type, "token 259 has unknown type 42");

  VocabSpec bad_byte = spm_spec({{"a", -1}});
  bad_byte.token_types.back() = 6;
  expect_load_error(bad_byte, "has type BYTE but its text 'a' is not of the form <0xXX>");

  VocabSpec short_scores = spm_spec({{"a", -1}});
  short_scores.scores.resize(5);
  expect_load_error(short_scores, "tokenizer.ggml.scores has 5 entries");

  VocabSpec nan_score = spm_spec({{"a", std::numeric_limits<float>::quiet_NaN()}});
  expect_load_error(nan_score, "token 259 has score NaN");
}

TEST(MalformedTokenizerMetadata, MergeProblems) {
  expect_load_error(bpe_spec({"ab"}, {"a b", "a zz"}), "tokenizer.ggml.merges[1] 'a zz' names unknown token 'zz'");
  expect_load_error(bpe_spec({"ab"}, {"qq b"}), "names unknown token 'qq'");
  expect_load_error(bpe_spec({"ab"}, {"b a"}), "makes 'ba', which is not in the vocabulary");
  expect_load_error(bpe_spec({"ab"}, {"ab"}), "is not two tokens separated by a space");

  VocabSpec no_merges = bpe_spec({}, {});
  no_merges.merges.reset();
  expect_load_error(no_merges, "missing tokenizer.ggml.merges");
}

TEST(MalformedTokenizerMetadata, AddBosWithoutBosToken) {
  VocabSpec spec;
  spec.model = "gpt2";
  spec.pre = "gpt-2";
  spec.token_texts = {"a", "b"};  // too small for the gpt2 default BOS id (11)
  spec.merges = std::vector<std::string>{};
  spec.extra.push_back({"tokenizer.ggml.add_bos_token", MetaValue::boolean(true)});
  expect_load_error(spec, "tokenizer.ggml.add_bos_token is true but there is no valid tokenizer.ggml.bos_token_id");
}

// Corrupted files (as a truncated download or a bad converter makes them): loading either fails with
// an Error or gives a tokenizer that works; never a crash (run under the sanitizers).
TEST(MalformedTokenizerMetadata, ByteFlippedImagesLoadOrFailCleanly) {
  const VocabSpec specs[] = {spm_spec({{"\xE2\x96\x81" "a", -1}, {"ab", -2}}),
                             bpe_spec({"ab", "Ġa"}, {"a b", "Ġ a"}, "llama-bpe")};
  std::mt19937 rng(4242);
  int n_loaded = 0, n_rejected = 0;
  for (const VocabSpec& spec : specs) {
    const std::vector<uint8_t> image = spec.image();
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> corrupted = image;
      for (uint32_t flips = 1 + rng() % 4; flips > 0; --flips) corrupted[rng() % corrupted.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      try {
        const auto file = GgufFile::from_bytes(std::move(corrupted), kFileName);
        const auto tokenizer = Tokenizer::from_gguf(*file);
        const std::vector<int32_t> ids = tokenizer->encode("a b\xC3\xA9 ab <s>", true, true);
        tokenizer->decode(ids, true);
        ++n_loaded;
      } catch (const Error&) {
        ++n_rejected;
      }
    }
  }
  EXPECT_GT(n_loaded, 0);
  EXPECT_GT(n_rejected, 0);
}

}  // namespace
}  // namespace nucleus
