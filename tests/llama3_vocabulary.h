// Llama 3's 128k vocabulary (the shared llama3-f16 test model's tokenizer) and its token trie, loaded
// once per test process, for the constraint tests that check masks against every token.
#pragma once
#include <memory>

#include "io/gguf.h"
#include "structured/token_mask.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::test {

inline const Tokenizer& llama3_tokenizer() {
  static std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(*GgufFile::open(shared_path("models/test/llama3-f16.gguf")));
  return *tokenizer;
}

inline std::shared_ptr<const VocabularyTrie> llama3_trie() {
  static auto trie = std::make_shared<const VocabularyTrie>(llama3_tokenizer());
  return trie;
}

}  // namespace nucleus::test
