// Regex → GBNF: a table of patterns with strings that must / must not match, std::regex
// (ECMAScript) as the oracle on random strings, the JSON-string form on escaped spellings, and
// the refused constructs (each named with its position).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "core/error.h"
#include "structured/grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/regex_to_gbnf.h"

namespace nucleus {
namespace {

Grammar full_regex(const std::string& pattern) { return parse_gbnf(regex_to_gbnf(pattern)); }

// A grammar for JSON strings (quotes included) whose decoded value `pattern` finds a match in.
Grammar json_string_regex(const std::string& pattern) {
  GbnfRules rules;
  const RegexFragment f = compile_regex(rules, pattern, RegexAnchoring::search, RegexTarget::json_string_contents);
  return parse_gbnf(rules.text("\"\\\"\" " + f.expression + " \"\\\"\""));
}

struct RegexCase {
  const char* pattern;
  std::vector<std::string> accept, reject;
};

TEST(StructuredRegexTable, FullMatch) {
  const std::vector<RegexCase> cases = {
      {"abc", {"abc"}, {"ab", "abcd", "xabc", ""}},
      {"^abc$", {"abc"}, {"abcc"}},
      {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
      {"a.c",
       {"abc", "a c",
        "a\xC3\xA9"
        "c"},
       {"a\nc", "a\rc", "ac"}},
      {"[a-c]+[^a-c]", {"abx", "c9", "a\xE6\x97\xA5"}, {"ab", "x", "abc"}},
      {"[\\d\\-]{2,3}", {"1-", "123", "--9"}, {"1", "1234", "a1"}},
      {"\\w+\\s\\W", {"ab_9 !", "x\t-"}, {"ab  !", "a b", "\xC3\xA9 !"}},
      {"\\D\\S", {"ab", "-x"}, {"1a", "a "}},
      {"(ab)*c", {"c", "abc", "ababc"}, {"abac", "ab"}},
      {"(?:x|yz)?w", {"w", "xw", "yzw"}, {"yw", "xxw"}},
      {"(?<year>\\d{4})-\\d{2}", {"2024-01"}, {"24-01"}},
      {"a{3}", {"aaa"}, {"aa", "aaaa"}},
      {"a{2,}", {"aa", "aaaaa"}, {"a"}},
      {"a{1,3}?b", {"ab", "aaab"}, {"b", "aaaab"}},
      {"x*?y+?", {"y", "xxyy"}, {"x", ""}},
      {"\\.\\\\\\/\\(\\)\\[\\]\\{\\}\\*\\+\\?\\|\\^\\$", {".\\/()[]{}*+?|^$"}, {""}},
      {"\\x41\\u00e9\\u{1F600}\\n\\t", {"A\xC3\xA9\xF0\x9F\x98\x80\n\t"}, {"A\xC3\xA9"}},
      {"[\\]\\-^]", {"]", "-", "^"}, {"a", "\\"}},
      {"[^]", {"a", "\n"}, {"", "ab"}},
      {"x{,2}", {"x{,2}"}, {"xx"}},  // not a quantifier in ECMAScript: literal braces
      // A literal brace after a quantifier leaves that quantifier as it was (found by fuzz_regex:
      // probing "{6,5=W}" once rewrote the "+" into {6,5}).
      {"a+{6,5=W}", {"a{6,5=W}", "aaa{6,5=W}"}, {"{6,5=W}", "aaaaaa"}},
      {"^dev|alpha$", {"dev", "alpha"}, {"devalpha"}},
      {"[\\uD83D\\uDE00-\\uD83D\\uDE02]", {"\xF0\x9F\x98\x81"}, {"\xF0\x9F\x98\x83"}},
  };
  for (const RegexCase& c : cases) {
    SCOPED_TRACE(c.pattern);
    Grammar g;
    try {
      g = full_regex(c.pattern);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    for (const std::string& s : c.accept) EXPECT_TRUE(grammar_matches(g, s)) << "should match: " << s;
    for (const std::string& s : c.reject) EXPECT_FALSE(grammar_matches(g, s)) << "should not match: " << s;
  }
}

// std::regex (ECMAScript, regex_match = full match) decides on random strings over a small alphabet.
TEST(StructuredRegexOracle, AgreesWithStdRegexOnRandomStrings) {
  const std::vector<std::string> patterns = {"a*b",
                                             "(a|b)*abb",
                                             "[ab]{2,4}c?",
                                             "a?b?c?",
                                             "(ab|a)(bc|c)",
                                             "\\d+(\\.\\d+)?",
                                             "[^a]*a[^a]*",
                                             "(a|bc)+",
                                             "x?(?:a{2}|b)*",
                                             "[a-c]\\s[0-9]",
                                             ".b.",
                                             "(a+|b+)c{0,2}",
                                             "\\w\\W?\\w",
                                             "a{0,3}b{1,2}",
                                             "(?:a|)b",
                                             "((a|b)c)*",
                                             "[\\d-]+",
                                             "\\S\\s*\\S",
                                             "^(0|[1-9][0-9]*)$",
                                             "(a|b|c|)(a|b|c|)",
                                             "[.-]a",
                                             "a.*b",
                                             "(ab){2}|ba",
                                             "\\D+1"};
  const std::string alphabet = "abc01 .-\n";
  std::mt19937 rng(12345);
  for (const std::string& pattern : patterns) {
    SCOPED_TRACE(pattern);
    const Grammar g = full_regex(pattern);
    const std::regex oracle(pattern, std::regex::ECMAScript);
    int disagreements = 0;
    for (int trial = 0; trial < 1500; ++trial) {
      const size_t length = rng() % 7;
      std::string s;
      for (size_t i = 0; i < length; ++i) s += alphabet[rng() % alphabet.size()];
      const bool expected = std::regex_match(s, oracle);
      if (grammar_matches(g, s) != expected && ++disagreements <= 5)
        ADD_FAILURE() << nlohmann::json(s).dump() << ": std::regex says " << expected;
    }
    EXPECT_EQ(disagreements, 0);
  }
}

// Every way of writing a character in a JSON string counts as that one character.
std::vector<std::string> spellings(const std::string& value) {
  std::string raw = nlohmann::json(value).dump();  // shortest spelling
  std::string escaped = "\"";                      // every character as \uXXXX
  for (unsigned char c : value) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04X", c);
    escaped += c < 0x80 ? std::string(buf) : std::string(1, static_cast<char>(c));
  }
  escaped += "\"";
  return {raw, escaped};
}

TEST(StructuredRegexJsonString, SearchSemanticsOnEscapedStrings) {
  const std::vector<std::string> patterns = {"^a+b$", "b",      "^[^a]*$",  "(ab|c)$",
                                             "^.\\d", "^\\s?x", "^\"\\\\$", "^a.c$"};
  const std::vector<std::string> values = {"ab",  "aab", "b", "",     "xb",   "c",    "abc", "a1",
                                           "\n1", "\tx", "x", "\"\\", "a\nc", "a\"c", "cab", "a/c"};
  for (const std::string& pattern : patterns) {
    SCOPED_TRACE(pattern);
    const Grammar g = json_string_regex(pattern);
    const std::regex oracle(pattern, std::regex::ECMAScript);
    for (const std::string& value : values) {
      const bool expected = std::regex_search(value, oracle);
      for (const std::string& text : spellings(value)) EXPECT_EQ(grammar_matches(g, text), expected) << text;
    }
  }
  // Short escapes and surrogate pairs are single characters too.
  const Grammar two = json_string_regex("^..$");
  for (const char* s : {R"("\b\t")", R"("\/\"")", R"("\uD83D\uDE00x")", "\"\xF0\x9F\x98\x80x\""})
    EXPECT_TRUE(grammar_matches(two, s)) << s;
  for (const char* s : {R"("\n")", R"("\uD83D\uDE00")", R"("\uD83Dx")", "\"\n\t\""})
    EXPECT_FALSE(grammar_matches(two, s)) << s;
}

TEST(StructuredRegexErrors, UnsupportedConstructsAreNamedWithTheirPosition) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"(a)\\1", {"backreference", "position 3"}},
      {"a(?=b)", {"lookahead", "position 1"}},
      {"a(?!b)", {"lookahead"}},
      {"(?<=a)b", {"lookbehind", "position 0"}},
      {"\\bword", {"word boundary", "position 0"}},
      {"\\p{L}+", {"Unicode property"}},
      {"a*+", {"possessive", "position 2"}},
      {"a^b", {"anchor ^", "position 1"}},
      {"(?i)abc", {"inline flag"}},
      {"(a*)*", {"can be empty"}},
      {"*a", {"nothing to repeat"}},
      {"(ab", {"missing ')'"}},
      {"ab)", {"unmatched ')'"}},
      {"[z-a]", {"out of order"}},
      {"\\k<x>", {"named backreference"}},
  };
  for (const auto& [pattern, parts] : cases) {
    try {
      regex_to_gbnf(pattern);
      ADD_FAILURE() << "compiled, but should be refused: " << pattern;
    } catch (const Error& e) {
      for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace nucleus
