// Chat answers' structural control tokens (vocab.h: is_output_marker_text) render as their text, so
// output parsers see them and grammars can produce them; other control tokens render as nothing.
#include <gtest/gtest.h>

#include <cstdio>

#include "io/gguf.h"
#include "model/synthetic_model.h"
#include "structured/grammar.h"
#include "structured/token_mask.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace nucleus {
namespace {

TEST(TokenizerOutputMarkers, MarkerControlTokensRenderAsTextOthersAsNothing) {
  NUCLEUS_REQUIRE_SHARED();
  // The shared vocabularies hold no marker as a control token: write one that does (Qwen's padding
  // slots renamed), as Mistral's vocabulary holds [TOOL_CALLS].
  SyntheticModelSpec spec;
  spec.arch = "qwen2";
  spec.vocab_path = test::shared_path("models/test/qwen2-f16.gguf");
  spec.dim = 32, spec.layers = 1, spec.heads = 2, spec.kv_heads = 2, spec.ffn = 32, spec.context_length = 64;
  spec.renamed_tokens = {{151657, "[TOOL_CALLS]", true}, {151658, "<|python_tag|>", true}, {151659, "<|my_control|>", true}};
  const std::string path = testing::TempDir() + "markers.gguf";
  write_synthetic_model(spec, path, 1);
  auto tokenizer = Tokenizer::from_gguf(*GgufFile::open(path));
  std::remove(path.c_str());
  for (int32_t id : {151657, 151658}) {
    SCOPED_TRACE(id);
    EXPECT_TRUE(tokenizer->is_control(id));
    const std::string text = id == 151657 ? "[TOOL_CALLS]" : "<|python_tag|>";
    EXPECT_EQ(tokenizer->token_to_piece(id, false), text);
    EXPECT_EQ(tokenizer->decode({id}, false), text);
    EXPECT_EQ(tokenizer->encode(text, false, true), std::vector<int32_t>{id});
    EXPECT_GT(tokenizer->encode(text, false, false).size(), 1u);  // plain text is not parsed as the token
  }
  EXPECT_TRUE(tokenizer->is_control(151659));
  EXPECT_EQ(tokenizer->token_to_piece(151659, false), "");
  EXPECT_EQ(tokenizer->token_to_piece(151659, true), "<|my_control|>");

  // A grammar asking for the marker's text can be satisfied by the marker token itself; other
  // control tokens are never allowed.
  auto trie = std::make_shared<const VocabularyTrie>(*tokenizer);
  EXPECT_EQ(trie->bytes_of(151657), "[TOOL_CALLS]");
  EXPECT_EQ(trie->bytes_of(151659), "");
  auto grammar = std::make_shared<const Grammar>(parse_gbnf(R"(root ::= "[TOOL_CALLS]" "[]")"));
  TokenConstraint constraint(grammar, trie);
  EXPECT_TRUE(constraint.allowed_tokens().allows(151657));
  EXPECT_FALSE(constraint.allowed_tokens().allows(151659));
  EXPECT_TRUE(constraint.accept_token(151657));
  // And the lazy form sees the marker token as the trigger.
  TokenConstraint lazy(grammar, trie, "[TOOL_CALLS]");
  EXPECT_TRUE(lazy.accept_token(151657));
  EXPECT_TRUE(lazy.triggered());
}

TEST(TokenizerOutputMarkers, TheMarkerList) {
  for (const char* marker : {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|python_tag|>", "<tool_call>", "</tool_call>", "<think>", "</think>"})
    EXPECT_TRUE(is_output_marker_text(marker)) << marker;
  for (const char* other : {"<|eot_id|>", "<s>", "[INST]", "<|im_end|>", "<think", ""}) EXPECT_FALSE(is_output_marker_text(other)) << other;
}

}  // namespace
}  // namespace nucleus
