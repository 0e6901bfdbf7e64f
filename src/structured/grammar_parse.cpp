// GBNF text → Grammar (grammar.h). Repetitions become helper rules with the repeated part in tail
// position (x* → r ::= x r | ε), which GrammarMatcher runs without growing its stacks.
#include <cctype>
#include <functional>
#include <map>
#include <optional>

#include "core/error.h"
#include "structured/grammar.h"
#include "structured/grammar_checks.h"
#include "structured/utf8_ranges.h"

namespace nucleus {
namespace {

using Sequence = std::vector<GrammarSymbol>;

GrammarSymbol byte_symbol(uint8_t lo, uint8_t hi) {
  GrammarSymbol s;
  s.kind = GrammarSymbol::Kind::bytes;
  s.lo = lo;
  s.hi = hi;
  return s;
}

GrammarSymbol rule_symbol(uint32_t rule) {
  GrammarSymbol s;
  s.kind = GrammarSymbol::Kind::rule;
  s.rule = rule;
  return s;
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root_rule) {
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (size_t r = 0; r < rules_.size(); ++r)
      if (!rules_[r].defined)
        throw Error("grammar: rule '" + names_[r] + "' is used (line " + std::to_string(rules_[r].first_use_line) +
                    ") but never defined");
    auto root = ids_.find(std::string(root_rule));
    if (root == ids_.end()) throw Error("grammar: no rule named '" + std::string(root_rule) + "' (the root)");
    Grammar g;
    g.rule_names = names_;
    g.root = root->second;
    for (const RawRule& rule : rules_) {
      std::vector<uint32_t> starts;
      for (const Sequence& alt : rule.alternatives) {
        starts.push_back(static_cast<uint32_t>(g.code.size()));
        g.code.insert(g.code.end(), alt.begin(), alt.end());
        g.code.push_back(GrammarSymbol{});
      }
      g.alternatives.push_back(std::move(starts));
    }
    check_grammar(g);
    return g;
  }

 private:
  struct RawRule {
    std::vector<Sequence> alternatives;
    bool defined = false;
    size_t first_use_line = 0;
  };

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error("grammar: " + what + " at line " + std::to_string(line) + ", column " + std::to_string(column));
  }
  size_t line() const {
    size_t line = 1;
    for (size_t i = 0; i < pos_; ++i) line += text_[i] == '\n';
    return line;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  // Spaces, tabs and comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  static bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t rule_id(const std::string& name) {
    auto [it, added] = ids_.try_emplace(name, static_cast<uint32_t>(rules_.size()));
    if (added) {
      rules_.emplace_back();
      rules_.back().first_use_line = line();
      names_.push_back(name);
    }
    return it->second;
  }

  // A rule for a group, repetition or class. Its name (for messages) is not entered in ids_: a rule
  // the grammar itself names the same way ("x-opt-5 ::= ...") is another rule, not defined twice.
  uint32_t helper_rule(const std::string& base) {
    const auto id = static_cast<uint32_t>(rules_.size());
    rules_.emplace_back();
    rules_.back().first_use_line = line();
    rules_.back().defined = true;
    names_.push_back(base + "-" + std::to_string(id));
    return id;
  }

  void parse_rule() {
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("expected ::= after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name);
    if (rules_[id].defined) fail("rule '" + name + "' is defined twice");
    rules_[id].defined = true;
    current_rule_ = name;
    rules_[id].alternatives = parse_alternatives(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') fail("expected the end of the line after rule '" + name + "'");
  }

  std::vector<Sequence> parse_alternatives(bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(nested));
    }
    return alternatives;
  }

  uint32_t parse_codepoint_escape(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      if (!std::isxdigit(static_cast<unsigned char>(c))) fail("expected " + std::to_string(digits) + " hex digits");
      value = value * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
      ++pos_;
    }
    return value;
  }

  // One character of a literal or class: a UTF-8 code point or an escape.
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of grammar");
    const auto c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'x': return parse_codepoint_escape(2);
        case 'u': return parse_codepoint_escape(4);
        case 'U': return parse_codepoint_escape(8);
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': return static_cast<uint32_t>(e);
        default: --pos_; fail(std::string("unknown escape \\") + e);
      }
    }
    // Decode one UTF-8 character of the grammar text itself.
    int length = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (length == 0 || pos_ + length > text_.size()) fail("invalid UTF-8 in the grammar");
    uint32_t cp = length == 1 ? c : c & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + i]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8 in the grammar");
      cp = (cp << 6) | (b & 0x3F);
    }
    pos_ += length;
    return cp;
  }

  // A rule matching one character of `set`; a single byte range is inlined instead.
  void append_class(const CodepointSet& set, Sequence& out) {
    const std::vector<Utf8Sequence> seqs = utf8_sequences(set);
    if (seqs.empty()) fail("empty character class");
    if (seqs.size() == 1 && seqs[0].length == 1) {
      out.push_back(byte_symbol(seqs[0].lo[0], seqs[0].hi[0]));
      return;
    }
    const uint32_t id = helper_rule(current_rule_ + "-char");
    for (const Utf8Sequence& s : seqs) {
      Sequence alt;
      for (int i = 0; i < s.length; ++i) alt.push_back(byte_symbol(s.lo[i], s.hi[i]));
      rules_[id].alternatives.push_back(std::move(alt));
    }
    out.push_back(rule_symbol(id));
  }

  Sequence parse_sequence(bool nested) {
    Sequence seq;
    size_t last_start = 0;  // where the last element's symbols begin, for a postfix operator
    bool have_last = false;
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        last_start = seq.size();
        std::string bytes;
        while (peek() != '"') {
          if (at_end() || peek() == '\n') fail("unterminated string literal");
          append_utf8(bytes, parse_char());
        }
        ++pos_;
        for (unsigned char b : bytes) seq.push_back(byte_symbol(b, b));
        have_last = !bytes.empty();
      } else if (c == '[') {
        ++pos_;
        const bool negated = peek() == '^';
        if (negated) ++pos_;
        CodepointSet set;
        while (peek() != ']') {
          if (at_end()) fail("unterminated character class");
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
            ++pos_;
            hi = parse_char();
            if (hi < lo) fail("character range out of order");
          }
          set.add(lo, hi);
        }
        ++pos_;
        last_start = seq.size();
        append_class(negated ? set.complement() : set, seq);
        have_last = true;
      } else if (c == '.') {
        ++pos_;
        CodepointSet any;
        any.add(0, kMaxCodepoint);
        last_start = seq.size();
        append_class(any, seq);
        have_last = true;
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        const uint32_t id = helper_rule(current_rule_ + "-group");
        auto alternatives = parse_alternatives(true);
        rules_[id].alternatives = std::move(alternatives);
        if (peek() != ')') fail("expected )");
        ++pos_;
        last_start = seq.size();
        seq.push_back(rule_symbol(id));
        have_last = true;
      } else if (is_name_char(c)) {
        const size_t name_start = pos_;
        const std::string name = parse_name();
        const size_t after_name = pos_;
        skip_space(false);
        const bool starts_rule = text_.substr(pos_, 3) == "::=";
        pos_ = starts_rule ? name_start : after_name;
        if (starts_rule) fail("a new rule '" + name + "' starts where the previous one ('" + current_rule_ +
                                                 "') has not ended");
        last_start = seq.size();
        seq.push_back(rule_symbol(rule_id(name)));
        have_last = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) fail(std::string("'") + c + "' follows nothing it could repeat");
        apply_repetition(seq, last_start);
        have_last = false;  // x** is not GBNF
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  // Replaces seq[last_start..] (the last element) by its repetition.
  void apply_repetition(Sequence& seq, size_t last_start) {
    const Sequence item(seq.begin() + static_cast<std::ptrdiff_t>(last_start), seq.end());
    seq.resize(last_start);
    int64_t min = 0, max = -1;  // -1: unbounded
    const char op = peek();
    ++pos_;
    if (op == '+') {
      min = 1;
    } else if (op == '?') {
      max = 1;
    } else if (op == '{') {
      auto number = [&]() -> int64_t {
        skip_space(false);
        const size_t start = pos_;
        int64_t v = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
          v = v * 10 + (peek() - '0');
          if (v > 100000) fail("repetition count too large");
          ++pos_;
        }
        if (pos_ == start) fail("expected a number in {}");
        skip_space(false);
        return v;
      };
      min = number();
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        max = peek() == '}' ? -1 : number();
      } else {
        max = min;
      }
      if (peek() != '}') fail("expected }");
      ++pos_;
      if (max >= 0 && max < min) fail("repetition {m,n} with n < m");
    }
    for (int64_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    if (max < 0) {
      // r ::= item r | ε
      const uint32_t r = helper_rule(current_rule_ + "-star");
      Sequence loop = item;
      loop.push_back(rule_symbol(r));
      rules_[r].alternatives = {loop, Sequence{}};
      seq.push_back(rule_symbol(r));
    } else if (max > min) {
      // r_k ::= item r_(k-1) | ε, r_1 ::= item | ε: up to (max − min) more.
      uint32_t inner = 0;
      for (int64_t k = 1; k <= max - min; ++k) {
        const uint32_t r = helper_rule(current_rule_ + "-opt");
        Sequence more = item;
        if (k > 1) more.push_back(rule_symbol(inner));
        rules_[r].alternatives = {more, Sequence{}};
        inner = r;
      }
      seq.push_back(rule_symbol(inner));
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<RawRule> rules_;
  std::vector<std::string> names_;
  std::map<std::string, uint32_t> ids_;
  std::string current_rule_;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view root_rule) { return GbnfParser(text).parse(root_rule); }

}  // namespace nucleus
