// Regex → GBNF: a recursive-descent parser to a small syntax tree, then one GBNF expression per
// node. Character classes are code point sets, so negation, `.` and the JSON-string form (each
// character raw or escaped) are all exact.
#include "structured/regex_to_gbnf.h"

#include <algorithm>

#include "core/error.h"

namespace nucleus {

// ---------------------------------------------------------------------------------------------
// GbnfRules

std::string GbnfRules::unique_name(std::string_view name_hint) {
  std::string base;
  for (char c : name_hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      base += c;
    } else if (!base.empty() && base.back() != '-') {
      base += '-';
    }
  }
  while (!base.empty() && base.back() == '-') base.pop_back();
  if (base.size() > 40) base.resize(40);
  if (base.empty()) base = "r";
  if (base == "root") base = "root-value";
  std::string name = base;
  for (int i = 2; index_of_name_.count(name); ++i) name = base + "-" + std::to_string(i);
  return name;
}

std::string GbnfRules::reserve(std::string_view name_hint) {
  std::string name = unique_name(name_hint);
  index_of_name_[name] = rules_.size();
  rules_.emplace_back(name, std::string());
  return name;
}

void GbnfRules::define(const std::string& name, const std::string& body) {
  rules_.at(index_of_name_.at(name)).second = body;
}

std::string GbnfRules::add(std::string_view name_hint, const std::string& body) {
  auto it = name_of_body_.find(body);
  if (it != name_of_body_.end()) return it->second;
  std::string name = reserve(name_hint);
  define(name, body);
  name_of_body_[body] = name;
  return name;
}

std::string GbnfRules::text(const std::string& root_body) const {
  std::string out = "root ::= " + root_body + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Literals, classes and JSON characters

namespace {

std::string hex(uint32_t value, int digits) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, value >>= 4) out[static_cast<size_t>(i)] = kDigits[value & 15];
  return out;
}

// One code point as written inside a GBNF literal or class; `special` lists the ASCII characters
// that need a backslash in that context.
std::string gbnf_char(uint32_t cp, std::string_view special) {
  if (cp < 0x20 || cp == 0x7F) return "\\x" + hex(cp, 2);
  if (cp < 0x80) {
    const char c = static_cast<char>(cp);
    if (special.find(c) != std::string_view::npos) return std::string("\\") + c;
    return std::string(1, c);
  }
  if (cp <= 0xFFFF) return "\\u" + hex(cp, 4);
  return "\\U" + hex(cp, 8);
}

}  // namespace

// Invalid input is an Error (a pattern or a schema string is always valid UTF-8).
std::vector<uint32_t> utf8_codepoints(std::string_view text, std::string_view what) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const int length = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (length == 0 || i + static_cast<size_t>(length) > text.size())
      throw Error(std::string(what) + ": invalid UTF-8");
    uint32_t cp = length == 1 ? c : c & (0x7Fu >> length);
    for (int k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    out.push_back(cp);
    i += static_cast<size_t>(length);
  }
  return out;
}

namespace {

CodepointSet intersect(const CodepointSet& a, uint32_t lo, uint32_t hi) {
  CodepointSet out;
  for (auto [l, h] : a.ranges()) out.add(std::max(l, lo), std::min(h, hi));
  return out;
}

CodepointSet subtract(const CodepointSet& a, const CodepointSet& b) {
  CodepointSet out;
  const CodepointSet not_b = b.complement();
  for (auto [l, h] : a.ranges())
    for (auto [bl, bh] : not_b.ranges()) out.add(std::max(l, bl), std::min(h, bh));
  return out;
}

// The class of digits [lo, hi] of `base` (10 or 16; hex letters in both cases).
std::string digit_class(int lo, int hi, int base) {
  CodepointSet set;
  for (int d = lo; d <= hi; ++d) {
    if (d < 10) {
      set.add('0' + static_cast<uint32_t>(d), '0' + static_cast<uint32_t>(d));
    } else {
      set.add('a' + static_cast<uint32_t>(d - 10), 'a' + static_cast<uint32_t>(d - 10));
      set.add('A' + static_cast<uint32_t>(d - 10), 'A' + static_cast<uint32_t>(d - 10));
    }
  }
  if (base == 10 && lo == hi) return "\"" + std::string(1, static_cast<char>('0' + lo)) + "\"";
  return gbnf_class(set);
}

std::string any_digits(size_t count, int base) {
  if (count == 0) return "";
  const std::string one = digit_class(0, base - 1, base);
  return count == 1 ? one : one + "{" + std::to_string(count) + "}";
}

}  // namespace

std::string gbnf_quote(std::string_view text) {
  std::string out = "\"";
  for (uint32_t cp : utf8_codepoints(text, "literal")) out += gbnf_char(cp, "\"\\");
  return out + "\"";
}

std::string gbnf_class(const CodepointSet& set) {
  std::string out = "[";
  for (auto [lo, hi] : set.ranges()) {
    out += gbnf_char(lo, "\\]-^[");
    if (hi > lo) out += (hi > lo + 1 ? "-" : "") + gbnf_char(hi, "\\]-^[");
  }
  return out + "]";
}

CodepointSet all_codepoints() {
  CodepointSet set;
  set.add(0, kMaxCodepoint);
  return set;
}

// Fixed-width digit strings between lo and hi (same length, lo ≤ hi, most significant first).
std::string gbnf_digit_range(const std::vector<int>& lo, const std::vector<int>& hi, int base) {
  const size_t n = lo.size();
  if (n == 0) return "";
  const std::vector<int> lo_rest(lo.begin() + 1, lo.end()), hi_rest(hi.begin() + 1, hi.end());
  auto rest_spaced = [](const std::string& s) { return s.empty() ? s : " " + s; };
  if (lo[0] == hi[0]) return digit_class(lo[0], lo[0], base) + rest_spaced(gbnf_digit_range(lo_rest, hi_rest, base));
  const bool lo_rest_min = std::all_of(lo_rest.begin(), lo_rest.end(), [](int d) { return d == 0; });
  const bool hi_rest_max = std::all_of(hi_rest.begin(), hi_rest.end(), [&](int d) { return d == base - 1; });
  std::vector<std::string> alternatives;
  int first = lo[0], last = hi[0];
  if (!lo_rest_min) {
    alternatives.push_back(digit_class(lo[0], lo[0], base) + " " +
                           gbnf_digit_range(lo_rest, std::vector<int>(n - 1, base - 1), base));
    ++first;
  }
  std::string tail;
  if (!hi_rest_max) {
    tail = digit_class(hi[0], hi[0], base) + " " + gbnf_digit_range(std::vector<int>(n - 1, 0), hi_rest, base);
    --last;
  }
  if (first <= last) alternatives.push_back(digit_class(first, last, base) + rest_spaced(any_digits(n - 1, base)));
  if (!tail.empty()) alternatives.push_back(tail);
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + ")";
}

namespace {

std::vector<int> hex_digits(uint32_t value) {
  std::vector<int> d(4);
  for (int i = 3; i >= 0; --i, value >>= 4) d[static_cast<size_t>(i)] = static_cast<int>(value & 15);
  return d;
}

std::string hex4_range(uint32_t lo, uint32_t hi) { return gbnf_digit_range(hex_digits(lo), hex_digits(hi), 16); }

}  // namespace

std::string json_string_char(GbnfRules& rules, const CodepointSet& set) {
  std::vector<std::string> alternatives;
  CodepointSet forbidden_raw;
  forbidden_raw.add(0, 0x1F);
  forbidden_raw.add('"', '"');
  forbidden_raw.add('\\', '\\');
  const CodepointSet raw = subtract(set, forbidden_raw);
  if (!raw.empty()) alternatives.push_back(gbnf_class(raw));
  // Short escapes: \" \\ \/ \b \f \n \r \t.
  static const std::pair<uint32_t, char> kShort[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {8, 'b'},
                                                     {12, 'f'},  {10, 'n'},    {13, 'r'},  {9, 't'}};
  CodepointSet short_letters;
  for (auto [cp, letter] : kShort)
    if (set.contains(cp)) short_letters.add(static_cast<uint32_t>(letter), static_cast<uint32_t>(letter));
  if (!short_letters.empty()) alternatives.push_back("\"\\\\\" " + gbnf_class(short_letters));
  // \uXXXX: BMP code points (the set holds no surrogates), then surrogate pairs for the rest.
  std::vector<std::string> hex_alternatives;
  const CodepointSet bmp = intersect(set, 0, 0xFFFF), supplementary = intersect(set, 0x10000, kMaxCodepoint);
  for (auto [lo, hi] : bmp.ranges()) hex_alternatives.push_back(hex4_range(lo, hi));
  for (auto [lo, hi] : supplementary.ranges()) {
    const uint32_t high_lo = 0xD800 + ((lo - 0x10000) >> 10), high_hi = 0xD800 + ((hi - 0x10000) >> 10);
    const uint32_t low_lo = 0xDC00 + ((lo - 0x10000) & 0x3FF), low_hi = 0xDC00 + ((hi - 0x10000) & 0x3FF);
    auto pair = [&](uint32_t h1, uint32_t h2, uint32_t l1, uint32_t l2) {
      hex_alternatives.push_back(hex4_range(h1, h2) + " \"\\\\u\" " + hex4_range(l1, l2));
    };
    if (high_lo == high_hi) {
      pair(high_lo, high_lo, low_lo, low_hi);
      continue;
    }
    uint32_t first_full = high_lo, last_full = high_hi;
    if (low_lo != 0xDC00) pair(high_lo, high_lo, low_lo, 0xDFFF), ++first_full;
    if (low_hi != 0xDFFF) --last_full;
    if (first_full <= last_full) pair(first_full, last_full, 0xDC00, 0xDFFF);
    if (low_hi != 0xDFFF) pair(high_hi, high_hi, 0xDC00, low_hi);
  }
  if (!hex_alternatives.empty()) {
    std::string body;
    for (size_t i = 0; i < hex_alternatives.size(); ++i) body += (i ? " | " : "") + hex_alternatives[i];
    alternatives.push_back("\"\\\\u\" " + rules.add("hex-escape", body));
  }
  if (alternatives.empty()) throw Error("json_string_char: empty character set");
  std::string body;
  for (size_t i = 0; i < alternatives.size(); ++i) body += (i ? " | " : "") + alternatives[i];
  return rules.add("char", body);
}

// ---------------------------------------------------------------------------------------------
// Regex parsing

namespace {

struct RegexNode {
  enum class Kind { empty, chars, concat, alternation, repeat, line_start, line_end };
  Kind kind = Kind::empty;
  CodepointSet chars;               // chars
  std::vector<RegexNode> children;  // concat, alternation, repeat (one child)
  size_t min = 0;                   // repeat
  std::optional<size_t> max;        // repeat; nullopt: unbounded
  size_t position = 0;              // where it starts in the pattern, for errors
};

CodepointSet single(uint32_t cp) {
  CodepointSet s;
  s.add(cp, cp);
  return s;
}

CodepointSet digit_set() {
  CodepointSet s;
  s.add('0', '9');
  return s;
}

CodepointSet word_set() {
  CodepointSet s;
  s.add('0', '9');
  s.add('A', 'Z');
  s.add('a', 'z');
  s.add('_', '_');
  return s;
}

// ECMAScript's WhiteSpace and LineTerminator.
CodepointSet space_set() {
  CodepointSet s;
  s.add(9, 13);
  s.add(' ', ' ');
  for (uint32_t cp : {0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) s.add(cp, cp);
  s.add(0x2000, 0x200A);
  return s;
}

CodepointSet dot_set() {
  CodepointSet line_terminators;
  line_terminators.add('\n', '\n');
  line_terminators.add('\r', '\r');
  line_terminators.add(0x2028, 0x2029);
  return line_terminators.complement();
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern) : pattern_(pattern), text_(utf8_codepoints(pattern, "regex")) {}

  RegexNode parse() {
    RegexNode node = parse_alternation();
    if (pos_ < text_.size()) fail("unmatched ')'");  // parse_alternation stops only at ')' or the end
    return node;
  }

  [[noreturn]] void fail(const std::string& what, std::optional<size_t> at = std::nullopt) const {
    throw Error("regex /" + std::string(pattern_) + "/: " + what + " at position " + std::to_string(at.value_or(pos_)));
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0; }
  bool peek_is(char c, size_t ahead = 0) const {
    return pos_ + ahead < text_.size() && text_[pos_ + ahead] == static_cast<uint32_t>(c);
  }

  RegexNode parse_alternation() {
    RegexNode first = parse_concat();
    if (!peek_is('|')) return first;
    RegexNode alt;
    alt.kind = RegexNode::Kind::alternation;
    alt.position = first.position;
    alt.children.push_back(std::move(first));
    while (peek_is('|')) {
      ++pos_;
      alt.children.push_back(parse_concat());
    }
    return alt;
  }

  RegexNode parse_concat() {
    RegexNode concat;
    concat.kind = RegexNode::Kind::concat;
    concat.position = pos_;
    while (!at_end() && !peek_is('|') && !peek_is(')')) {
      RegexNode atom = parse_atom();
      parse_quantifier(atom);
      concat.children.push_back(std::move(atom));
    }
    if (concat.children.size() == 1) return std::move(concat.children[0]);
    if (concat.children.empty()) concat.kind = RegexNode::Kind::empty;
    return concat;
  }

  // {m}, {m,}, {m,n} at pos_: sets min/max and returns the length of the syntax, or 0 when the
  // brace is not a quantifier (ECMAScript then reads it as a literal '{').
  size_t read_braces(size_t& min, std::optional<size_t>& max) const {
    size_t i = pos_ + 1;
    auto number = [&](size_t& out) {
      const size_t start = i;
      out = 0;
      while (i < text_.size() && text_[i] >= '0' && text_[i] <= '9') {
        out = out * 10 + (text_[i] - '0');
        if (out > 100000) fail("repetition count too large");
        ++i;
      }
      return i > start;
    };
    if (!number(min)) return 0;
    if (i < text_.size() && text_[i] == ',') {
      ++i;
      size_t n = 0;
      if (number(n)) {
        max = n;
      } else {
        max.reset();
      }
    } else {
      max = min;
    }
    if (i >= text_.size() || text_[i] != '}') return 0;
    return i + 1 - pos_;
  }

  void parse_quantifier(RegexNode& atom) {
    size_t min = 0;
    std::optional<size_t> max;
    const size_t at = pos_;
    if (peek_is('*')) {
      min = 0, max.reset(), ++pos_;
    } else if (peek_is('+')) {
      min = 1, max.reset(), ++pos_;
    } else if (peek_is('?')) {
      min = 0, max = 1, ++pos_;
    } else if (peek_is('{')) {
      const size_t length = read_braces(min, max);
      if (length == 0) return;
      pos_ += length;
    } else {
      return;
    }
    if (max && *max < min) fail("repetition {m,n} with n < m", at);
    if (atom.kind == RegexNode::Kind::line_start || atom.kind == RegexNode::Kind::line_end)
      fail("quantifier on an anchor", at);
    if (peek_is('?')) ++pos_;  // lazy: the same language
    if (peek_is('+')) fail("possessive quantifier");
    // A second quantifier repeats nothing. Probed into scratch: read_braces writes its counts even
    // when the brace turns out to be a literal ("a+{6,5=W}"), which must not change this one's.
    size_t next_min = 0;
    std::optional<size_t> next_max;
    if (peek_is('*') || peek_is('?') || (peek_is('{') && read_braces(next_min, next_max) > 0)) fail("nothing to repeat");
    RegexNode repeat;
    repeat.kind = RegexNode::Kind::repeat;
    repeat.position = atom.position;
    repeat.min = min;
    repeat.max = max;
    repeat.children.push_back(std::move(atom));
    atom = std::move(repeat);
  }

  RegexNode chars_node(CodepointSet set, size_t position) {
    RegexNode n;
    n.kind = RegexNode::Kind::chars;
    n.chars = std::move(set);
    n.position = position;
    return n;
  }

  RegexNode parse_atom() {
    const size_t start = pos_;
    const uint32_t c = peek();
    if (c == '(') {
      ++pos_;
      if (peek_is('?')) {
        if (peek_is(':', 1)) {
          pos_ += 2;
        } else if (peek_is('=', 1) || peek_is('!', 1)) {
          fail("unsupported lookahead (?" + std::string(1, static_cast<char>(peek(1))) + "...)", start);
        } else if (peek_is('<', 1) && (peek_is('=', 2) || peek_is('!', 2))) {
          fail("unsupported lookbehind (?<" + std::string(1, static_cast<char>(peek(2))) + "...)", start);
        } else if (peek_is('<', 1) || (peek_is('P', 1) && peek_is('<', 2))) {
          while (!at_end() && !peek_is('>')) ++pos_;  // a named group: the name changes nothing
          if (at_end()) fail("unterminated group name", start);
          ++pos_;
        } else {
          fail("unsupported group or inline flag (?" + std::string(1, static_cast<char>(peek(1))) + "...)", start);
        }
      }
      RegexNode inner = parse_alternation();
      if (!peek_is(')')) fail("missing ')'", start);
      ++pos_;
      inner.position = start;
      return inner;
    }
    if (c == '[') return chars_node(parse_class(), start);
    if (c == '.') {
      ++pos_;
      return chars_node(dot_set(), start);
    }
    if (c == '^' || c == '$') {
      ++pos_;
      RegexNode n;
      n.kind = c == '^' ? RegexNode::Kind::line_start : RegexNode::Kind::line_end;
      n.position = start;
      return n;
    }
    if (c == '*' || c == '+' || c == '?') fail("nothing to repeat");
    if (c == '{') {
      size_t min = 0;
      std::optional<size_t> max;
      if (read_braces(min, max) > 0) fail("nothing to repeat");
    }
    if (c == '\\') {
      ++pos_;
      return chars_node(parse_escape(false), start);
    }
    ++pos_;
    return chars_node(single(c), start);
  }

  uint32_t hex_value(size_t digits) {
    uint32_t value = 0;
    for (size_t i = 0; i < digits; ++i) {
      const uint32_t d = peek();
      uint32_t v;
      if (d >= '0' && d <= '9') {
        v = d - '0';
      } else if ((d | 0x20) >= 'a' && (d | 0x20) <= 'f') {
        v = (d | 0x20) - 'a' + 10;
      } else {
        fail("expected " + std::to_string(digits) + " hex digits");
      }
      value = value * 16 + v;
      ++pos_;
    }
    return value;
  }

  // After a backslash; `in_class` changes \b (backspace there, a word boundary outside).
  CodepointSet parse_escape(bool in_class) {
    if (at_end()) fail("pattern ends with a backslash");
    const size_t start = pos_ - 1;
    const uint32_t e = peek();
    ++pos_;
    switch (e) {
      case 'd':
        return digit_set();
      case 'D':
        return digit_set().complement();
      case 'w':
        return word_set();
      case 'W':
        return word_set().complement();
      case 's':
        return space_set();
      case 'S':
        return space_set().complement();
      case 'n':
        return single('\n');
      case 'r':
        return single('\r');
      case 't':
        return single('\t');
      case 'f':
        return single('\f');
      case 'v':
        return single('\v');
      case 'b':
        if (in_class) return single('\b');
        fail("unsupported word boundary \\b", start);
      case 'B':
        fail("unsupported word boundary \\B", start);
      case 'p':
      case 'P':
        fail("unsupported Unicode property class \\" + std::string(1, static_cast<char>(e)), start);
      case 'k':
        fail("unsupported named backreference \\k", start);
      case '0':
        if (peek() >= '0' && peek() <= '9') fail("unsupported octal escape", start);
        return single(0);
      case 'x':
        return single(hex_value(2));
      case 'c': {
        const uint32_t letter = peek();
        if (!((letter | 0x20) >= 'a' && (letter | 0x20) <= 'z')) fail("\\c must be followed by a letter", start);
        ++pos_;
        return single(letter % 32);
      }
      case 'u': {
        uint32_t cp;
        if (peek_is('{')) {
          ++pos_;
          cp = 0;
          size_t n = 0;
          while (!at_end() && !peek_is('}')) {
            cp = cp * 16 + hex_value(1);
            if (++n > 6 || cp > kMaxCodepoint) fail("\\u{...} out of range", start);
          }
          if (at_end() || n == 0) fail("unterminated \\u{...}", start);
          ++pos_;
        } else {
          cp = hex_value(4);
          // A surrogate pair written as two escapes is one character.
          if (cp >= 0xD800 && cp <= 0xDBFF && peek_is('\\') && peek_is('u', 1)) {
            const size_t save = pos_;
            pos_ += 2;
            const uint32_t low = hex_value(4);
            if (low >= 0xDC00 && low <= 0xDFFF) return single(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00));
            pos_ = save;
          }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) fail("unsupported lone surrogate \\u" + hex(cp, 4), start);
        return single(cp);
      }
      default:
        break;
    }
    if (e >= '1' && e <= '9') fail("unsupported backreference \\" + std::string(1, static_cast<char>(e)), start);
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
      fail("unsupported escape \\" + std::string(1, static_cast<char>(e)), start);
    return single(e);  // escaped punctuation (or any other character) stands for itself
  }

  CodepointSet parse_class() {
    const size_t start = pos_;
    ++pos_;  // '['
    const bool negated = peek_is('^');
    if (negated) ++pos_;
    CodepointSet set;
    // One class atom: a single character (returned) or a class escape like \d (added to `set`).
    auto class_atom = [&](std::optional<uint32_t>& single_char) {
      if (peek_is('\\')) {
        ++pos_;
        const CodepointSet escaped = parse_escape(true);
        if (escaped.ranges().size() == 1 && escaped.ranges()[0].first == escaped.ranges()[0].second) {
          single_char = escaped.ranges()[0].first;
        } else {
          single_char.reset();
          for (auto [lo, hi] : escaped.ranges()) set.add(lo, hi);
        }
        return;
      }
      if (peek_is('[') && (peek_is(':', 1) || peek_is('=', 1) || peek_is('.', 1)))
        fail("unsupported POSIX class [" + std::string(1, static_cast<char>(peek(1))) + "...");
      single_char = peek();
      ++pos_;
    };
    while (!peek_is(']')) {
      if (at_end()) fail("unterminated character class", start);
      const size_t atom_start = pos_;
      std::optional<uint32_t> lo;
      class_atom(lo);
      if (peek_is('-') && !peek_is(']', 1) && pos_ + 1 < text_.size()) {
        if (!lo) fail("a class escape cannot start a range", atom_start);
        ++pos_;
        std::optional<uint32_t> hi;
        class_atom(hi);
        if (!hi) fail("a class escape cannot end a range", atom_start);
        if (*hi < *lo) fail("character range out of order", atom_start);
        set.add(*lo, *hi);
      } else if (lo) {
        set.add(*lo, *lo);
      }
    }
    ++pos_;  // ']'
    return negated ? set.complement() : set;
  }

  std::string_view pattern_;
  std::vector<uint32_t> text_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Emission

bool nullable(const RegexNode& n) {
  switch (n.kind) {
    case RegexNode::Kind::empty:
    case RegexNode::Kind::line_start:
    case RegexNode::Kind::line_end:
      return true;
    case RegexNode::Kind::chars:
      return false;
    case RegexNode::Kind::concat:
      return std::all_of(n.children.begin(), n.children.end(), [](const RegexNode& c) { return nullable(c); });
    case RegexNode::Kind::alternation:
      return std::any_of(n.children.begin(), n.children.end(), [](const RegexNode& c) { return nullable(c); });
    case RegexNode::Kind::repeat:
      return n.min == 0 || nullable(n.children[0]);
  }
  return false;
}

class RegexEmitter {
 public:
  RegexEmitter(GbnfRules& rules, RegexTarget target, const RegexParser& parser)
      : rules_(rules), target_(target), parser_(parser) {}

  // The expression, with min/max lengths in code points.
  std::string emit(const RegexNode& n, size_t& min, std::optional<size_t>& max) {
    switch (n.kind) {
      case RegexNode::Kind::empty:
        min = 0, max = 0;
        return "\"\"";
      case RegexNode::Kind::line_start:
      case RegexNode::Kind::line_end:
        parser_.fail(std::string("unsupported anchor ") + (n.kind == RegexNode::Kind::line_start ? "^" : "$") +
                         " inside the pattern (only at the start/end of a top-level alternative)",
                     n.position);
      case RegexNode::Kind::chars:
        if (n.chars.empty()) parser_.fail("empty character class (matches nothing)", n.position);
        min = 1, max = 1;
        return char_expression(n.chars);
      case RegexNode::Kind::concat: {
        std::string out;
        min = 0, max = 0;
        for (const RegexNode& c : n.children) {
          size_t cmin;
          std::optional<size_t> cmax;
          out += (out.empty() ? "" : " ") + emit(c, cmin, cmax);
          min += cmin;
          max = (max && cmax) ? std::optional<size_t>(*max + *cmax) : std::nullopt;
        }
        return out;
      }
      case RegexNode::Kind::alternation: {
        std::string out = "(";
        min = SIZE_MAX, max = 0;
        for (size_t i = 0; i < n.children.size(); ++i) {
          size_t cmin;
          std::optional<size_t> cmax;
          out += (i ? " | " : "") + emit(n.children[i], cmin, cmax);
          min = std::min(min, cmin);
          max = (max && cmax) ? std::optional<size_t>(std::max(*max, *cmax)) : std::nullopt;
        }
        return out + ")";
      }
      case RegexNode::Kind::repeat: {
        const RegexNode& child = n.children[0];
        // x* with a nullable x would make a rule that loops without consuming (left recursion).
        if (!n.max && nullable(child))
          parser_.fail("unsupported unbounded repetition of something that can be empty", n.position);
        size_t cmin;
        std::optional<size_t> cmax;
        const std::string inner = "(" + emit(child, cmin, cmax) + ")";
        min = cmin * n.min;
        max = (n.max && cmax) ? std::optional<size_t>(*cmax * *n.max) : std::nullopt;
        if (n.max && *n.max == 0) {
          max = 0;
          return "\"\"";
        }
        if (n.min == 0 && !n.max) return inner + "*";
        if (n.min == 1 && !n.max) return inner + "+";
        if (n.min == 0 && n.max == 1) return inner + "?";
        if (n.min == 1 && n.max == 1) return inner;
        return inner + "{" + std::to_string(n.min) + (n.max == n.min ? "" : ",") +
               (n.max && *n.max != n.min ? std::to_string(*n.max) : "") + "}";
      }
    }
    return "\"\"";
  }

  std::string char_expression(const CodepointSet& set) {
    if (target_ == RegexTarget::json_string_contents) return json_string_char(rules_, set);
    if (set.ranges().size() == 1 && set.ranges()[0].first == set.ranges()[0].second) {
      std::string literal;
      append_utf8(literal, set.ranges()[0].first);
      return gbnf_quote(literal);
    }
    return rules_.add("class", gbnf_class(set));
  }

 private:
  GbnfRules& rules_;
  RegexTarget target_;
  const RegexParser& parser_;
};

}  // namespace

RegexFragment compile_regex(GbnfRules& rules, std::string_view pattern, RegexAnchoring anchoring, RegexTarget target) {
  RegexParser parser(pattern);
  RegexNode tree = parser.parse();
  RegexEmitter emitter(rules, target, parser);
  std::vector<RegexNode> alternatives;
  if (tree.kind == RegexNode::Kind::alternation) {
    alternatives = std::move(tree.children);
  } else {
    alternatives.push_back(std::move(tree));
  }
  const std::string any_text = emitter.char_expression(all_codepoints()) + "*";
  RegexFragment fragment;
  fragment.min_length = SIZE_MAX;
  fragment.max_length = 0;
  std::string out;
  for (RegexNode& alternative : alternatives) {
    // Peel the anchors at this alternative's ends.
    std::vector<RegexNode> parts;
    if (alternative.kind == RegexNode::Kind::concat) {
      parts = std::move(alternative.children);
    } else {
      parts.push_back(std::move(alternative));
    }
    bool starts_anchored = false, ends_anchored = false;
    while (!parts.empty() && parts.front().kind == RegexNode::Kind::line_start) {
      starts_anchored = true;
      parts.erase(parts.begin());
    }
    while (!parts.empty() && parts.back().kind == RegexNode::Kind::line_end) {
      ends_anchored = true;
      parts.pop_back();
    }
    RegexNode body;
    body.kind = parts.empty() ? RegexNode::Kind::empty : RegexNode::Kind::concat;
    body.children = std::move(parts);
    size_t min;
    std::optional<size_t> max;
    std::string expression = emitter.emit(body, min, max);
    if (anchoring == RegexAnchoring::search) {
      if (!starts_anchored) expression = any_text + " " + expression, max.reset();
      if (!ends_anchored) expression = expression + " " + any_text, max.reset();
    }
    fragment.min_length = std::min(fragment.min_length, min);
    fragment.max_length =
        (fragment.max_length && max) ? std::optional<size_t>(std::max(*fragment.max_length, *max)) : std::nullopt;
    out += (out.empty() ? "" : " | ") + expression;
  }
  fragment.expression = alternatives.size() > 1 ? "(" + out + ")" : out;
  return fragment;
}

RegexComplement compile_regex_complement(GbnfRules& rules, std::string_view pattern) {
  RegexParser parser(pattern);
  RegexNode tree = parser.parse();
  std::vector<RegexNode> parts;
  if (tree.kind == RegexNode::Kind::concat) {
    parts = std::move(tree.children);
  } else {
    parts.push_back(std::move(tree));
  }
  const bool starts_anchored = !parts.empty() && parts.front().kind == RegexNode::Kind::line_start;
  if (starts_anchored) parts.erase(parts.begin());
  const bool ends_anchored = !parts.empty() && parts.back().kind == RegexNode::Kind::line_end;
  if (ends_anchored) parts.pop_back();
  RegexComplement out;
  if (parts.size() != 1) return out;
  const RegexNode& body = parts[0];
  const RegexNode* chars = &body;
  size_t min = 1;
  std::optional<size_t> max = 1;
  if (body.kind == RegexNode::Kind::repeat) chars = &body.children[0], min = body.min, max = body.max;
  if (chars->kind != RegexNode::Kind::chars || chars->chars.empty()) return out;
  out.handled = true;
  // Strings of the class C, and "one character outside C, then anything" pieces.
  const std::string in_class = json_string_char(rules, chars->chars);
  const CodepointSet outside_set = chars->chars.complement();
  const std::string any = json_string_char(rules, all_codepoints()) + "*";
  const std::optional<std::string> outside =
      outside_set.empty() ? std::nullopt : std::optional<std::string>(json_string_char(rules, outside_set));
  auto fewer = [&](size_t count) {
    return count == 0 ? std::string() : "(" + in_class + "){0," + std::to_string(count - 1) + "}";
  };
  std::vector<std::string> alternatives;
  if (!starts_anchored && !ends_anchored) {
    // A match exists iff some run of C has at least `min` characters.
    if (min == 0) return out;
    if (min > 1) {
      out.handled = false;
      return out;
    }
    // Strings without any C (only the empty one when C holds every character).
    alternatives.push_back(outside ? "(" + *outside + ")*" : "\"\"");
  } else if (starts_anchored && ends_anchored) {
    // A match iff every character is in C and the length lies in [min, max].
    if (outside) alternatives.push_back(any + " " + *outside + " " + any);
    if (min > 0) alternatives.push_back(min == 1 ? "\"\"" : fewer(min));
    if (max) alternatives.push_back("(" + in_class + "){" + std::to_string(*max + 1) + ",}");
  } else {
    // Anchored at one end: a match iff the `min` characters at that end are all in C.
    if (min == 0) return out;
    const std::string short_run = min == 1 ? "\"\"" : fewer(min);
    alternatives.push_back(short_run);
    if (outside)
      alternatives.push_back(starts_anchored ? (min == 1 ? "" : short_run + " ") + *outside + " " + any
                                             : any + " " + *outside + (min == 1 ? "" : " " + short_run));
  }
  if (!alternatives.empty())
    out.expression = "(" + [&] {
      std::string joined;
      for (size_t i = 0; i < alternatives.size(); ++i) joined += (i ? " | " : "") + alternatives[i];
      return joined;
    }() + ")";
  return out;
}

std::string regex_to_gbnf(std::string_view pattern) {
  GbnfRules rules;
  const RegexFragment fragment = compile_regex(rules, pattern, RegexAnchoring::full, RegexTarget::raw_text);
  return rules.text(fragment.expression);
}

}  // namespace nucleus
