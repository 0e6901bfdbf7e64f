// GBNF grammars: parsing, the byte-level matcher, and llama.cpp's own verdicts on the shared
// grammars (every accept string is a complete match; every reject string is refused at the code
// point llama.cpp refused it, or stays an incomplete prefix).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "structured/grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/utf8_ranges.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

std::vector<std::string> read_string_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line).get<std::string>());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Complete code points among the first `bytes` bytes of `text`.
size_t codepoints_within(const std::string& text, size_t bytes) {
  size_t count = 0, i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    if (i + len > bytes) break;
    i += len;
    ++count;
  }
  return count;
}

TEST(StructuredGbnf, SharedGrammarsGiveLlamaCppsVerdictOnEveryString) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string dir = test::shared_path("structured/gbnf");
  // VERDICTS.tsv: grammar, file (accept/reject), line (1-based), verdict, detail (code point index).
  std::map<std::string, std::pair<std::string, size_t>> verdicts;
  {
    std::ifstream in(dir + "/VERDICTS.tsv");
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::string grammar, file, number, verdict, detail;
      std::getline(ss, grammar, '\t');
      std::getline(ss, file, '\t');
      std::getline(ss, number, '\t');
      std::getline(ss, verdict, '\t');
      std::getline(ss, detail, '\t');
      verdicts[grammar + "/" + file + "/" + number] = {verdict, detail.empty() ? 0 : std::stoul(detail)};
    }
  }
  size_t grammars = 0, checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gbnf") continue;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    const Grammar g = parse_gbnf(read_file(entry.path().string()));
    ++grammars;
    const auto accepts = read_string_lines(dir + "/" + name + ".accept.txt");
    const auto rejects = read_string_lines(dir + "/" + name + ".reject.txt");
    ASSERT_FALSE(accepts.empty());
    ASSERT_FALSE(rejects.empty());
    for (size_t i = 0; i < accepts.size(); ++i) {
      EXPECT_TRUE(grammar_matches(g, accepts[i])) << "accept line " << i + 1 << ": " << accepts[i];
      ++checked;
    }
    for (size_t i = 0; i < rejects.size(); ++i) {
      const std::string& s = rejects[i];
      EXPECT_FALSE(grammar_matches(g, s)) << "reject line " << i + 1 << ": " << s;
      const auto it = verdicts.find(name + "/reject/" + std::to_string(i + 1));
      ASSERT_NE(it, verdicts.end());
      const size_t prefix = grammar_prefix_length(g, s);
      if (it->second.first == "PREFIX") {
        EXPECT_EQ(prefix, s.size()) << "reject line " << i + 1 << " should be a valid prefix: " << s;
      } else {
        ASSERT_EQ(it->second.first, "REJECT");
        EXPECT_LT(prefix, s.size());
        EXPECT_EQ(codepoints_within(s, prefix), it->second.second) << "reject line " << i + 1 << ": " << s;
      }
      ++checked;
    }
  }
  EXPECT_EQ(grammars, 8u);
  EXPECT_GE(checked, 200u);
}

TEST(StructuredGbnf, RepetitionCountsAreExact) {
  const Grammar g = parse_gbnf("root ::= \"a\"{2,4} \"b\"? [0-9]+ | \"x\"{3}\n");
  for (const char* yes : {"aa0", "aaa12", "aaaab9", "xxx", "aab000"}) EXPECT_TRUE(grammar_matches(g, yes)) << yes;
  for (const char* no : {"a0", "aaaaa0", "aab", "xx", "xxxx", "aabb1", ""}) EXPECT_FALSE(grammar_matches(g, no)) << no;
}

TEST(StructuredGbnf, ClassesMatchWholeUtf8CharactersByteByByte) {
  const Grammar g = parse_gbnf("root ::= [^a-z\"]* \"!\"\n");
  EXPECT_TRUE(grammar_matches(g, "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80!"));  // é 日 😀
  EXPECT_FALSE(grammar_matches(g, "b!"));
  EXPECT_FALSE(grammar_matches(g, "\xc3!"));          // a lead byte without its continuation
  EXPECT_FALSE(grammar_matches(g, "\xed\xa0\x80!"));  // an encoded surrogate is not UTF-8
  EXPECT_EQ(grammar_prefix_length(g, "\xc3\xa9z"), 2u);

  // Every code point of a random-looking set, against the set's own membership.
  CodepointSet set;
  set.add(0x41, 0x5A);
  set.add(0x7F0, 0x812);
  set.add(0xFFF0, 0x10010);
  set.add(0x10FF00, 0x10FFFF);
  const auto seqs = utf8_sequences(set);
  for (uint32_t cp = 0; cp <= kMaxCodepoint; cp += (cp < 0x20000 ? 1 : 97)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string bytes;
    append_utf8(bytes, cp);
    bool covered = false;
    for (const Utf8Sequence& s : seqs) {
      if (s.length != static_cast<int>(bytes.size())) continue;
      bool fits = true;
      for (int i = 0; i < s.length; ++i)
        fits = fits && static_cast<uint8_t>(bytes[i]) >= s.lo[i] && static_cast<uint8_t>(bytes[i]) <= s.hi[i];
      covered = covered || fits;
    }
    ASSERT_EQ(covered, set.contains(cp)) << std::hex << cp;
  }
}

TEST(StructuredGbnf, MatcherRollsBackToEarlierStates) {
  auto automaton = std::make_shared<GrammarAutomaton>(std::make_shared<const Grammar>(parse_gbnf("root ::= \"ab\" \"c\"* \"d\"\n")));
  GrammarMatcher m(automaton);
  EXPECT_TRUE(m.accept("ab"));
  EXPECT_TRUE(m.accept("cc"));
  EXPECT_FALSE(m.accept("x"));  // refused: nothing changes
  EXPECT_FALSE(m.accepting());
  EXPECT_TRUE(m.accept("d"));
  EXPECT_TRUE(m.accepting());
  m.rollback(2);  // back to after "ab"
  EXPECT_FALSE(m.accept("d") && m.accept("c"));
  m.rollback(1);
  EXPECT_TRUE(m.accept("ccd"));
  EXPECT_TRUE(m.accepting());
  // Repetition keeps the stack depth: a long run of c creates no new stack nodes.
  const size_t nodes = automaton->num_nodes();
  m.rollback(1);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(m.accept("c"));
  EXPECT_EQ(automaton->num_nodes(), nodes);
}

TEST(StructuredGbnf, MalformedGrammarsAreErrorsNamingTheProblem) {
  auto error_of = [](const std::string& text) {
    try {
      parse_gbnf(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of("root ::= foo\n").find("'foo' is used"), std::string::npos);
  EXPECT_NE(error_of("start ::= \"a\"\n").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"\n").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= x\nx ::= \"\" root\n").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc\n").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("root ::= [b-a]\n").find("out of order at line 1, column 14"), std::string::npos);
  EXPECT_NE(error_of("root ::= [abc").find("unterminated character class"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" )\n").find("end of the line"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}\n").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"\n").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"\n").find("defined twice"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"\nx ::= \"b\")\n").find("has not ended"), std::string::npos);
}

}  // namespace
}  // namespace nucleus
