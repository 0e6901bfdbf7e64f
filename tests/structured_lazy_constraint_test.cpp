// Lazy constraints (TokenConstraint with a trigger, what tool_choice "auto" uses): free text until the
// trigger appears, then the grammar — checked over Llama 3's 128k vocabulary against brute force
// (every token tried with accept_token), across trigger splits, end of generation and rollback.
#include <gtest/gtest.h>

#include "io/gguf.h"
#include "structured/grammar.h"
#include "structured/token_mask.h"
#include "llama3_vocabulary.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {
namespace {

using test::llama3_tokenizer;
using test::llama3_trie;

std::shared_ptr<const Grammar> call_grammar() {
  static auto grammar = std::make_shared<const Grammar>(parse_gbnf(R"(root ::= "<tool_call>" "{" [a-z]+ "}" "</tool_call>")"));
  return grammar;
}

std::vector<int32_t> encode(const std::string& text) { return llama3_tokenizer().encode(text, false, false); }

TokenConstraint lazy_after(const std::vector<int32_t>& tokens) {
  TokenConstraint c(call_grammar(), llama3_trie(), "<tool_call>");
  for (int32_t t : tokens) EXPECT_TRUE(c.accept_token(t)) << t;
  return c;
}

// Which tokens accept_token takes after `tokens` (each tried on a fresh copy of the state).
std::vector<char> brute_force(const std::vector<int32_t>& tokens) {
  TokenConstraint probe = lazy_after(tokens);
  std::vector<char> allowed(static_cast<size_t>(llama3_trie()->n_vocab()), 0);
  for (int32_t id = 0; id < llama3_trie()->n_vocab(); ++id)
    if (probe.accept_token(id)) {
      allowed[static_cast<size_t>(id)] = 1;
      probe.rollback(1);
    }
  return allowed;
}

TEST(StructuredLazyConstraint, MaskEqualsBruteForceBeforeAndAfterTheTrigger) {
  NUCLEUS_REQUIRE_SHARED();
  // Free text, text ending in proper prefixes of the trigger, and text past it.
  for (const std::string prefix : {"", "Hello", "Hello <", "Hello <tool", "Hello <tool_call", "ok <tool_call>{ab"}) {
    SCOPED_TRACE(prefix);
    const std::vector<int32_t> tokens = prefix.empty() ? std::vector<int32_t>{} : encode(prefix);
    TokenConstraint c = lazy_after(tokens);
    const std::vector<char> expected = brute_force(tokens);
    const TokenMask& mask = c.allowed_tokens();
    size_t refused = 0, mismatches = 0;
    for (int32_t id = 0; id < llama3_trie()->n_vocab(); ++id) {
      refused += !expected[static_cast<size_t>(id)];
      mismatches += mask.allows(id) != static_cast<bool>(expected[static_cast<size_t>(id)]);
    }
    EXPECT_EQ(mismatches, 0u);
    if (prefix.find("<tool_call>") == std::string::npos) {
      EXPECT_FALSE(c.triggered());
      // Free text refuses only tokens that would open the call with bytes the grammar refuses
      // (after "Hello <tool_call": ">" followed by anything but "{").
      EXPECT_LT(refused, 1000u);
      if (prefix.ends_with("<tool_call")) {
        EXPECT_GT(refused, 0u);
      }
    } else {
      EXPECT_TRUE(c.triggered());
      for (int32_t id = 0; id < llama3_trie()->n_vocab(); ++id)  // inside the call: [a-z]+ "}" ...
        if (mask.allows(id)) {
          const std::string& b = llama3_trie()->bytes_of(id);
          EXPECT_TRUE(!b.empty() && (std::islower(static_cast<unsigned char>(b[0])) || b[0] == '}')) << b;
        }
    }
  }
}

TEST(StructuredLazyConstraint, TokensCompletingTheTriggerWithBadBytesAreRefused) {
  NUCLEUS_REQUIRE_SHARED();
  TokenConstraint c = lazy_after(encode("Hello <tool"));
  // Whichever token begins "_call>" then a byte the grammar refuses must be masked; "_call" alone is fine.
  const TokenMask& mask = c.allowed_tokens();
  for (int32_t id = 0; id < llama3_trie()->n_vocab(); ++id) {
    const std::string& b = llama3_trie()->bytes_of(id);
    if (b.rfind("_call>", 0) == 0 && b.size() > 6 && b[6] != '{') {
      EXPECT_FALSE(mask.allows(id)) << b;
    }
    if (b == "_call" || b == "_") {
      EXPECT_TRUE(mask.allows(id)) << b;
    }
  }
}

TEST(StructuredLazyConstraint, AWholeCallIsTakenAndEndsOnlyWhenComplete) {
  NUCLEUS_REQUIRE_SHARED();
  const std::vector<int32_t> eog = llama3_trie()->end_of_generation_ids();
  ASSERT_FALSE(eog.empty());
  {  // Free text may end anywhere.
    TokenConstraint c = lazy_after(encode("Just text, no call."));
    EXPECT_TRUE(c.complete());
    EXPECT_TRUE(c.accept_token(eog[0]));
    EXPECT_TRUE(c.ended());
  }
  {
    const std::vector<int32_t> tokens = encode("Let me look. <tool_call>{abc}</tool_call>");
    TokenConstraint c(call_grammar(), llama3_trie(), "<tool_call>");
    for (size_t i = 0; i < tokens.size(); ++i) {
      ASSERT_TRUE(c.accept_token(tokens[i])) << i;
      if (i + 1 < tokens.size() && c.triggered()) {
        EXPECT_FALSE(c.complete());
        TokenConstraint copy = lazy_after(std::vector<int32_t>(tokens.begin(), tokens.begin() + static_cast<ptrdiff_t>(i) + 1));
        EXPECT_FALSE(copy.accept_token(eog[0]));  // an open call cannot end
      }
    }
    EXPECT_TRUE(c.triggered());
    EXPECT_TRUE(c.complete());
    EXPECT_TRUE(c.accept_token(eog[0]));
  }
  {  // A call breaking the grammar is refused at the token that breaks it.
    const std::vector<int32_t> tokens = encode("x <tool_call>{ABC}");
    TokenConstraint c(call_grammar(), llama3_trie(), "<tool_call>");
    size_t taken = 0;
    while (taken < tokens.size() && c.accept_token(tokens[taken])) ++taken;
    EXPECT_LT(taken, tokens.size());
    std::string seen;
    for (size_t i = 0; i <= taken && i < tokens.size(); ++i) seen += llama3_trie()->bytes_of(tokens[i]);
    EXPECT_NE(seen.find('A'), std::string::npos);  // the refused token is the one holding the capital
  }
}

TEST(StructuredLazyConstraint, RollbackAcrossTheTriggerRestoresFreeText) {
  NUCLEUS_REQUIRE_SHARED();
  const std::vector<int32_t> tokens = encode("Hi <tool_call>{ab");
  TokenConstraint c(call_grammar(), llama3_trie(), "<tool_call>");
  std::vector<std::vector<uint64_t>> masks;
  for (int32_t t : tokens) {
    masks.push_back(c.allowed_tokens().words);
    ASSERT_TRUE(c.accept_token(t));
  }
  ASSERT_TRUE(c.triggered());
  for (size_t k = tokens.size(); k-- > 0;) {
    c.rollback(1);
    EXPECT_EQ(c.allowed_tokens().words, masks[k]) << "after undoing token " << k;
  }
  EXPECT_FALSE(c.triggered());
  // And forward again, in one go, then back past everything.
  for (int32_t t : tokens) ASSERT_TRUE(c.accept_token(t));
  EXPECT_TRUE(c.triggered());
  c.rollback(tokens.size());
  EXPECT_FALSE(c.triggered());
  EXPECT_EQ(c.allowed_tokens().words, masks[0]);
}

}  // namespace
}  // namespace nucleus
