// Token masks over a real 128k vocabulary (Llama 3's): the trie walk equals checking every token
// one by one (sound and complete), GBNF accept strings can be produced token by token and reject
// strings cannot, end-of-generation is allowed exactly when the grammar is complete, and rollback
// restores earlier masks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/rng.h"
#include "io/gguf.h"
#include "structured/constraint.h"
#include "structured/grammar.h"
#include "structured/token_mask.h"
#include "llama3_vocabulary.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {
namespace {

using test::llama3_tokenizer;
using test::brute_force_mask;
using test::llama3_trie;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> read_string_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line).get<std::string>());
  return out;
}


// Under the sanitizers (memory and UB errors, not coverage): shorter walks, every 3rd string.
#ifdef NUCLEUS_SANITIZED
constexpr int kWalkSteps = 3;
constexpr size_t kStringStride = 3;
#else
constexpr int kWalkSteps = 6;
constexpr size_t kStringStride = 1;
#endif

TEST(StructuredTokenMask, TrieWalkEqualsCheckingEveryTokenAlongRandomPaths) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string dir = test::shared_path("structured/gbnf");
  const std::vector<std::pair<std::string, std::string>> grammars = {
      {"json", read_file(dir + "/json.gbnf")},
      {"arithmetic", read_file(dir + "/arithmetic.gbnf")},
      {"japanese", read_file(dir + "/japanese.gbnf")},
      {"json_object", json_object_gbnf()},
      {"choice", "root ::= \"yes\" | \"no\" | \"maybe not\"\n"},
  };
  for (const auto& [name, text] : grammars) {
    SCOPED_TRACE(name);
    auto grammar = std::make_shared<const Grammar>(parse_gbnf(text));
    TokenConstraint constraint(grammar, llama3_trie());
    std::vector<int32_t> path;
    uint64_t rng = 12345;
    for (int step = 0; step < kWalkSteps; ++step) {
      const TokenMask& mask = constraint.allowed_tokens();
      const std::vector<char> expected = brute_force_mask(grammar, path);
      size_t n_allowed = 0;
      for (int32_t id = 0; id < llama3_trie()->n_vocab(); ++id) {
        ASSERT_EQ(mask.allows(id), expected[static_cast<size_t>(id)] != 0)
            << "step " << step << " token " << id << " '" << llama3_trie()->bytes_of(id) << "'";
        n_allowed += expected[static_cast<size_t>(id)];
      }
      if (n_allowed == 0) break;
      // Take a random allowed token (not end-of-generation) to reach the next state.
      std::vector<int32_t> choices;
      for (int32_t id = 0; id < llama3_trie()->n_vocab(); ++id)
        if (expected[static_cast<size_t>(id)] && !llama3_trie()->is_end_of_generation(id)) choices.push_back(id);
      if (choices.empty()) break;
      const int32_t next = choices[splitmix64(rng++) % choices.size()];
      ASSERT_TRUE(constraint.accept_token(next));
      path.push_back(next);
    }
  }
}

TEST(StructuredTokenMask, GbnfAcceptStringsCanBeProducedTokenByTokenAndRejectStringsCannot) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = llama3_tokenizer();
  const std::string dir = test::shared_path("structured/gbnf");
  size_t accepted = 0, rejected = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gbnf") continue;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    auto grammar = std::make_shared<const Grammar>(parse_gbnf(read_file(entry.path().string())));
    auto tables = std::make_shared<ConstraintTables>(grammar, llama3_trie());  // shared, as the engine does
    auto produce = [&](const std::string& s) {
      TokenConstraint constraint(tables);
      for (int32_t t : tokenizer.encode(s, false, false)) {
        if (!constraint.allowed_tokens().allows(t)) return false;
        EXPECT_TRUE(constraint.accept_token(t));
      }
      const bool eog_allowed = constraint.allowed_tokens().allows(tokenizer.eos_id()) ||
                               constraint.allowed_tokens().allows(tokenizer.end_of_generation_ids().front());
      EXPECT_EQ(eog_allowed, constraint.complete());
      return constraint.complete();
    };
    const std::vector<std::string> accept = read_string_lines(dir + "/" + name + ".accept.txt");
    const std::vector<std::string> reject = read_string_lines(dir + "/" + name + ".reject.txt");
    for (size_t i = 0; i < accept.size(); i += kStringStride) {
      EXPECT_TRUE(produce(accept[i])) << accept[i];
      ++accepted;
    }
    for (size_t i = 0; i < reject.size(); i += kStringStride) {
      EXPECT_FALSE(produce(reject[i])) << reject[i];
      ++rejected;
    }
  }
  EXPECT_GE(accepted, 100u / kStringStride);
  EXPECT_GE(rejected, 100u / kStringStride);
}

TEST(StructuredTokenMask, EndOfGenerationOnlyWhenCompleteAndRollbackRestoresMasks) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = llama3_tokenizer();
  auto grammar = std::make_shared<const Grammar>(parse_gbnf("root ::= \"ab\" [0-9]*\n"));
  TokenConstraint constraint(grammar, llama3_trie());
  const int32_t eog = tokenizer.end_of_generation_ids().front();
  EXPECT_FALSE(constraint.allowed_tokens().allows(eog));
  const size_t first_count = constraint.allowed_tokens().count();
  const int32_t ab = tokenizer.find_token("ab");
  ASSERT_GE(ab, 0);
  ASSERT_TRUE(constraint.accept_token(ab));
  EXPECT_TRUE(constraint.allowed_tokens().allows(eog));
  EXPECT_FALSE(constraint.allowed_tokens().allows(ab));
  const int32_t digits = tokenizer.find_token("123");
  ASSERT_GE(digits, 0);
  EXPECT_TRUE(constraint.allowed_tokens().allows(digits));
  ASSERT_TRUE(constraint.accept_token(digits));
  ASSERT_TRUE(constraint.accept_token(eog));
  EXPECT_TRUE(constraint.ended());
  EXPECT_EQ(constraint.allowed_tokens().count(), 0u);  // nothing after the end
  EXPECT_FALSE(constraint.accept_token(digits));
  constraint.rollback(3);
  EXPECT_FALSE(constraint.ended());
  EXPECT_EQ(constraint.allowed_tokens().count(), first_count);
  EXPECT_FALSE(constraint.accept_token(digits));  // not allowed at the start
}

}  // namespace
}  // namespace nucleus
