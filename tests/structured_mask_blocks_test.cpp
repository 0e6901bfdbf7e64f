// The fast paths of a token mask (token_mask.h: ConstraintTables) against checking every token one
// by one, over Llama 3's 128k vocabulary, at every token of texts chosen to reach them:
// * chain: bounded strings (a state per character: maxLength below, at and above the chain's
//   precomputed length), free strings (a chain of one state), a string at its maximum;
// * first byte: keys that must not spell a declared name (additionalProperties), names sharing
//   prefixes, a name with a non-ASCII character (whose continuation bytes tell it from other keys);
// * many live stacks (anyOf, enum) through the lazily determinized automaton;
// and rollback (speculative drafts) returning the same masks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/rng.h"
#include "llama3_vocabulary.h"
#include "structured/constraint.h"
#include "structured/grammar.h"
#include "structured/token_mask.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {
namespace {

using test::llama3_tokenizer;
using test::brute_force_mask;
using test::llama3_trie;

std::shared_ptr<const Grammar> schema_grammar(const std::string& schema) {
  ConstraintSpec spec;
  spec.kind = ConstraintSpec::Kind::json_schema;
  spec.text = schema;
  return std::make_shared<const Grammar>(parse_gbnf(constraint_to_gbnf(spec)));
}


void expect_mask_equals(const TokenMask& mask, const std::vector<char>& expected, const std::string& where) {
  size_t mismatches = 0;
  for (int32_t id = 0; id < llama3_trie()->n_vocab() && mismatches < 5; ++id) {
    if (mask.allows(id) == (expected[static_cast<size_t>(id)] != 0)) continue;
    ++mismatches;
    ADD_FAILURE() << where << ": token " << id << " '" << llama3_trie()->bytes_of(id) << "' mask "
                  << mask.allows(id) << " brute force " << int(expected[static_cast<size_t>(id)]);
  }
}

// Feeds `text`'s tokens one by one, comparing the mask before each (every `stride`-th) and after
// the last with brute force; the text must be a sentence of the grammar.
void check_text(const std::shared_ptr<const Grammar>& grammar, const std::string& text, size_t stride = 1) {
  SCOPED_TRACE(text);
  const std::vector<int32_t> tokens = llama3_tokenizer().encode(text, false, false);
  TokenConstraint constraint(grammar, llama3_trie());
  std::vector<int32_t> prefix;
  for (size_t i = 0; i <= tokens.size(); ++i) {
    if (i % stride == 0 || i == tokens.size())
      expect_mask_equals(constraint.allowed_tokens(), brute_force_mask(grammar, prefix), "before token " + std::to_string(i));
    if (i == tokens.size()) break;
    ASSERT_TRUE(constraint.allowed_tokens().allows(tokens[i])) << "token " << i << " '" << llama3_trie()->bytes_of(tokens[i]) << "'";
    ASSERT_TRUE(constraint.accept_token(tokens[i]));
    prefix.push_back(tokens[i]);
  }
  EXPECT_TRUE(constraint.complete());
}

#ifdef NUCLEUS_SANITIZED
constexpr size_t kStride = 4;
#else
constexpr size_t kStride = 1;
#endif

TEST(StructuredMaskBlocks, BoundedStringsStepThroughAChainOfStates) {
  NUCLEUS_REQUIRE_SHARED();
  // maxLength 7: the chain ends in a dead state within the precomputed lengths.
  check_text(schema_grammar(R"({"type":"string","maxLength":7})"), "\"abc déf\"", kStride);
  // Exactly at the maximum, then only the closing quote (and escapes count as one character).
  check_text(schema_grammar(R"({"type":"string","minLength":3,"maxLength":9})"), "\"a\\\"b\\u00e9c d\"", kStride);
  // maxLength beyond the chain's precomputed length: long tokens are run from its last state.
  check_text(schema_grammar(R"({"type":"string","maxLength":40})"),
             "\"                                   hello\"", kStride);
  check_text(schema_grammar(R"({"type":"string","minLength":30,"maxLength":1000})"),
             "\"Lorem ipsum dolor sit amet, consectetur adipiscing elit\"", kStride);
}

TEST(StructuredMaskBlocks, FreeStringsAndKeysThatAreNoDeclaredName) {
  NUCLEUS_REQUIRE_SHARED();
  // additionalProperties (default true): an extra key must differ from every declared name,
  // including the one with a non-ASCII character and names sharing prefixes.
  const auto grammar = schema_grammar(
      R"({"type":"object","properties":{"tytuł":{"type":"string"},"name":{"type":"string"},"names":{"type":"integer"},"naming":{"type":"boolean"}}})");
  check_text(grammar, R"({"tytuł":"Przelew domyślny","name":"x y","nam":"ł","tytuX":"\n"})", kStride);
  check_text(grammar, R"({"names":12,"naming":true,"tytu":"ab","ł":"c","name ":"","nameś":"d"})", kStride);
}

TEST(StructuredMaskBlocks, ManyLiveStacksThroughTheDeterminizedAutomaton) {
  NUCLEUS_REQUIRE_SHARED();
  const auto grammar = schema_grammar(
      R"({"anyOf":[{"type":"object","properties":{"kind":{"enum":["alpha","alphabet","beta","betamax","gamma"]},"count":{"type":"integer","minimum":-5,"maximum":120}},"required":["kind"],"additionalProperties":false},
                   {"type":"array","items":{"type":"string","maxLength":4},"maxItems":3},
                   {"type":"string","pattern":"^[a-z]+-[0-9]{2,3}$"}]})");
  check_text(grammar, R"({"kind":"alphabet","count":-3})", kStride);
  check_text(grammar, R"(["ab","","wxyz"])", kStride);
  check_text(grammar, R"("abc-123")", kStride);
}

TEST(StructuredMaskBlocks, MasksSharedBetweenContextsAreExactInEachContext) {
  NUCLEUS_REQUIRE_SHARED();
  // One definition used at several depths and in several properties, formats in several places,
  // free and bounded strings, numbers that end the value (a plain ',' or '}' returns into the
  // context), extra keys: each rule's shared mask is computed once and resolved per context.
  const auto grammar = schema_grammar(R"({
    "$defs": {"node": {"type": "object", "properties": {
        "id": {"type": "string", "format": "uuid"}, "home": {"type": "string", "format": "uri"},
        "size": {"type": "integer"}, "label": {"type": "string", "maxLength": 6},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}, "spare": {"$ref": "#/$defs/node"},
                   "when": {"type": "string", "format": "date"}, "site": {"type": "string", "format": "uri"}},
    "required": ["root"]})");
  const std::string text =
      R"({"root":{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","home":"https://a.example/x?y=1","size":12,"label":"ab c",)"
      R"("kids":[{"home":"http://b.example","size":-3,"kids":[{"size":0,"label":"","x":"y"}]},{"size":7}]},)"
      R"("spare":{"home":"ftp://c.example/","kids":[]},"when":"2024-02-29","site":"https://d.example/p"})";
  check_text(grammar, text, kStride);
  TokenConstraint constraint(grammar, llama3_trie());
  auto tables = std::make_shared<ConstraintTables>(grammar, llama3_trie());
  TokenConstraint shared(tables);
  for (int32_t t : llama3_tokenizer().encode(text, false, false)) {
    ASSERT_TRUE(shared.allowed_tokens().allows(t));
    ASSERT_TRUE(shared.accept_token(t));
  }
  // The masks were shared: fewer shared states than states.
  EXPECT_GT(tables->num_shared_masks(), 0u);
  EXPECT_LT(tables->num_shared_masks(), tables->num_masks());
}

TEST(StructuredMaskBlocks, RollbackReturnsTheSameMasks) {
  NUCLEUS_REQUIRE_SHARED();
  const auto grammar = schema_grammar(
      R"({"type":"object","properties":{"title":{"type":"string","maxLength":12},"tags":{"type":"array","items":{"type":"string"}}}})");
  const std::vector<int32_t> tokens = llama3_tokenizer().encode(R"({"title":"draft one","tags":["a b","c"],"x":"y"})", false, false);
  TokenConstraint constraint(grammar, llama3_trie());
  std::vector<std::vector<uint64_t>> masks;
  for (int32_t t : tokens) {
    masks.push_back(constraint.allowed_tokens().words);
    ASSERT_TRUE(constraint.accept_token(t));
  }
  // Undo in drafts of 1..4 tokens and redo: every mask is the one seen the first time.
  uint64_t rng = 7;
  size_t at = tokens.size();
  while (at > 0) {
    const size_t n = std::min<size_t>(at, 1 + splitmix64(rng++) % 4);
    constraint.rollback(n);
    at -= n;
    EXPECT_EQ(constraint.allowed_tokens().words, masks[at]) << "after rolling back to " << at;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(constraint.allowed_tokens().words, masks[i]) << "replay " << i;
    ASSERT_TRUE(constraint.accept_token(tokens[i]));
  }
  EXPECT_TRUE(constraint.complete());
}

TEST(StructuredMaskBlocks, MaskLogitsRefusesExactlyTheTokensOutsideTheMask) {
  NUCLEUS_REQUIRE_SHARED();
  const auto grammar = schema_grammar(R"({"type":"string","maxLength":3})");
  TokenConstraint constraint(grammar, llama3_trie());
  ASSERT_TRUE(constraint.accept_token(llama3_tokenizer().encode("\"", false, false).front()));
  const int64_t n_vocab = llama3_trie()->n_vocab() + 70;  // a padded output row
  std::vector<float> logits(static_cast<size_t>(n_vocab), 1.0f);
  constraint.mask_logits(logits.data(), n_vocab);
  const TokenMask& mask = constraint.allowed_tokens();
  for (int64_t id = 0; id < n_vocab; ++id) {
    const bool allowed = id < llama3_trie()->n_vocab() && mask.allows(static_cast<int32_t>(id));
    ASSERT_EQ(logits[static_cast<size_t>(id)] == 1.0f, allowed) << "token " << id;
  }
}

}  // namespace
}  // namespace nucleus
