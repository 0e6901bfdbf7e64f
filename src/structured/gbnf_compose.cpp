#include "structured/gbnf_compose.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/error.h"
#include "structured/regex_to_gbnf.h"
#include "structured/utf8_ranges.h"

namespace nucleus {
namespace {

// The characters parse_gbnf reads as part of a rule name (ASCII only, as std::isalnum in the
// "C" locale).
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

void check_name_chars(std::string_view name, std::string_view what, bool allow_empty) {
  if (!allow_empty && name.empty()) throw Error(std::string(what) + " is empty");
  for (char c : name)
    if (!is_name_char(c))
      throw Error(std::string(what) + " '" + std::string(name) + "' has a character rule names cannot have (only A-Z a-z 0-9 - _)");
}

// Copies text[pos..] up to and including the unescaped `close` (or to the end of the line when
// it is missing: parse_gbnf will report the unterminated literal or class), advancing pos.
void copy_delimited(std::string_view text, size_t& pos, char close, std::string& out) {
  out += text[pos++];  // the opening character
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '\\' && pos + 1 < text.size()) {
      out += c;
      out += text[pos + 1];
      pos += 2;
      continue;
    }
    if (c == '\n') return;
    out += c;
    ++pos;
    if (c == close) return;
  }
}

}  // namespace

std::string prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix) {
  check_name_chars(prefix, "rule name prefix", true);
  std::string out;
  out.reserve(gbnf.size() + gbnf.size() / 4);
  size_t pos = 0;
  while (pos < gbnf.size()) {
    const char c = gbnf[pos];
    if (c == '"') {
      copy_delimited(gbnf, pos, '"', out);
    } else if (c == '[') {
      copy_delimited(gbnf, pos, ']', out);
    } else if (c == '#') {
      while (pos < gbnf.size() && gbnf[pos] != '\n') out += gbnf[pos++];
    } else if (c == '{') {
      // A repetition count: digits that are not rule names.
      while (pos < gbnf.size() && gbnf[pos] != '}' && gbnf[pos] != '\n') out += gbnf[pos++];
    } else if (is_name_char(c)) {
      const size_t start = pos;
      while (pos < gbnf.size() && is_name_char(gbnf[pos])) ++pos;
      out += prefix;
      out += gbnf.substr(start, pos - start);
    } else {
      out += c;
      ++pos;
    }
  }
  return out;
}

std::string gbnf_text_without(std::string_view literal, std::string_view rule_name) {
  check_name_chars(rule_name, "rule name", false);
  const std::vector<uint32_t> cps = utf8_codepoints(literal, "the literal to exclude");
  if (cps.empty()) throw Error("gbnf_text_without: the literal is empty (every text contains it)");
  const size_t n = cps.size();

  // The distinct characters of the literal; every other character leads back to state 0.
  std::vector<uint32_t> chars = cps;
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  auto index_of = [&](uint32_t cp) {
    return static_cast<size_t>(std::lower_bound(chars.begin(), chars.end(), cp) - chars.begin());
  };

  // KMP automaton over states 0..n (n = the literal just completed): delta[q][k] is the state
  // after reading chars[k] in state q; fail[q] is the longest proper border of the first q chars.
  std::vector<std::vector<size_t>> delta(n + 1, std::vector<size_t>(chars.size(), 0));
  std::vector<size_t> fail(n + 1, 0);
  for (size_t q = 0; q <= n; ++q) {
    if (q >= 2) fail[q] = delta[fail[q - 1]][index_of(cps[q - 1])];
    for (size_t k = 0; k < chars.size(); ++k) {
      if (q < n && cps[q] == chars[k]) {
        delta[q][k] = q + 1;
      } else {
        delta[q][k] = q == 0 ? 0 : delta[fail[q]][k];
      }
    }
  }
  // A text may end in state q when the literal written next would first be completed at its end.
  auto may_end_in = [&](size_t q) {
    size_t s = q;
    for (size_t j = 0; j < n; ++j) {
      s = delta[s][index_of(cps[j])];
      if (s == n) return j == n - 1;
    }
    return false;  // unreachable: reading the literal always completes it
  };
  auto name = [&](size_t q) {
    return q == 0 ? std::string(rule_name) : std::string(rule_name) + "-" + std::to_string(q);
  };

  std::string out;
  for (size_t q = 0; q < n; ++q) {
    std::map<size_t, CodepointSet> to_state;  // target state ≠ 0, n → the characters leading there
    CodepointSet matter;                      // characters not leading to state 0 (nor through [^...])
    for (size_t k = 0; k < chars.size(); ++k) {
      const size_t t = delta[q][k];
      if (t == 0) continue;
      matter.add(chars[k], chars[k]);
      if (t != n) to_state[t].add(chars[k], chars[k]);
    }
    out += name(q) + " ::=";
    bool first = true;
    auto alternative = [&](const std::string& body) {
      out += first ? " " : " | ";
      out += body;
      first = false;
    };
    if (may_end_in(q)) alternative("");  // "x ::= | a b": the empty alternative first
    const std::string matter_class = gbnf_class(matter);  // "[...]", never empty (literal[q] leads to q+1)
    alternative("[^" + matter_class.substr(1) + " " + name(0));
    for (const auto& [t, set] : to_state) {
      const auto& ranges = set.ranges();
      std::string symbol;
      if (ranges.size() == 1 && ranges[0].first == ranges[0].second) {
        std::string one;
        append_utf8(one, ranges[0].first);
        symbol = gbnf_quote(one);
      } else {
        symbol = gbnf_class(set);
      }
      alternative(symbol + " " + name(t));
    }
    out += "\n";
  }
  return out;
}


}  // namespace nucleus
