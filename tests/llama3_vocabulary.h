// Llama 3's 128k vocabulary (the shared llama3-f16 test model's tokenizer) and its token trie, loaded
// once per test process, for the constraint tests that check masks against every token.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "io/gguf.h"
#include "structured/constraint.h"
#include "structured/grammar.h"
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

// Brute force, the reference every mask test compares with: which tokens a fresh matcher, fed
// `prefix` token by token, accepts next (one accept_token + rollback per vocabulary entry).
inline std::vector<char> brute_force_mask(const std::shared_ptr<const Grammar>& grammar, const std::vector<int32_t>& prefix) {
  TokenConstraint probe(grammar, llama3_trie());
  for (int32_t t : prefix) EXPECT_TRUE(probe.accept_token(t));
  std::vector<char> allowed(static_cast<size_t>(llama3_trie()->n_vocab()), 0);
  for (int32_t id = 0; id < llama3_trie()->n_vocab(); ++id) {
    if (probe.accept_token(id)) {
      allowed[static_cast<size_t>(id)] = 1;
      probe.rollback(1);
    }
  }
  return allowed;
}

}  // namespace nucleus::test
