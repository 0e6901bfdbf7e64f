// Regular expressions → GBNF text (llama.cpp's dialect, read by parse_gbnf), and the small GBNF
// writing kit the JSON Schema compiler shares: a rule set that reuses identical rules, and the
// grammar of one JSON-encoded character from a code point set.
//
// Regex dialect: the ECMAScript subset that JSON Schema `pattern` and vLLM's guided_regex use —
// literals, `.`, classes `[...]` (ranges, negation, escapes), `\d \w \s \D \W \S`, escapes
// (`\n \t \r \f \v \0 \xHH \uHHHH \u{H..} \cX`, escaped punctuation), groups `( )`, `(?: )`,
// `(?<name> )`, `|`, quantifiers `* + ? {m} {m,} {m,n}` (a lazy `?` suffix changes nothing for a
// grammar) and the anchors `^` `$` at the start/end of a top-level alternative. Classes follow
// ECMAScript, not Python: `\d` is [0-9], `\w` is [A-Za-z0-9_], `.` is any code point but
// \n \r U+2028 U+2029, `$` matches only at the very end (Python's `re`, which some validators
// use, also matches before a final newline). Backreferences, lookaround, `\b \B`, `\p{..}`,
// inline flags, anchors elsewhere and unbounded repetition of something that can be empty are
// refused: Error naming the construct and its position.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "structured/utf8_ranges.h"

namespace nucleus {

// GBNF rules under construction. A rule body is one line of GBNF (alternatives, groups); adding a
// body that was added before returns the existing rule, so repeated subschemas and classes are
// emitted once.
class GbnfRules {
 public:
  // The name of a rule with `body`: an existing one with the same body, or a new one named after
  // `name_hint` (sanitized to [a-zA-Z0-9-], made unique).
  std::string add(std::string_view name_hint, const std::string& body);
  // A fresh unique name whose body is given later by define() (for recursive rules).
  std::string reserve(std::string_view name_hint);
  void define(const std::string& name, const std::string& body);
  // The grammar text: `root ::= root_body` first, then every rule in creation order.
  std::string text(const std::string& root_body) const;

 private:
  std::string unique_name(std::string_view name_hint);
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body (empty body: reserved, not yet defined)
  std::map<std::string, size_t> index_of_name_;
  std::map<std::string, std::string> name_of_body_;
};

// The code points of UTF-8 `text`; invalid UTF-8 is an Error naming `what`.
std::vector<uint32_t> utf8_codepoints(std::string_view text, std::string_view what);

// `text` as a GBNF string literal ("..." with escapes; non-ASCII as \u / \U escapes).
std::string gbnf_quote(std::string_view text);
// `set` as a GBNF character class; empty sets are the caller's to avoid (parse_gbnf refuses them).
std::string gbnf_class(const CodepointSet& set);

// An expression matching one character of `set` as it may be written inside a JSON string: raw
// (except `"`, `\` and U+0000–U+001F, which JSON forbids raw), as a short escape (\" \\ \/ \b \f
// \n \r \t) or as \uXXXX (hex digits in either case; characters outside the BMP as a surrogate
// pair). Exactly one character is consumed whichever spelling is used, so counts stay exact.
// Returns a rule name (rules are shared between identical sets); `set` must not be empty.
std::string json_string_char(GbnfRules& rules, const CodepointSet& set);
// Every code point (surrogates excluded, as CodepointSet does).
CodepointSet all_codepoints();

// An expression matching the fixed-width digit strings from `lo` to `hi` (digits most significant
// first, same length, lo ≤ hi) in `base` 10 or 16 (hex letters in either case): the building
// block of exact integer ranges and of \uXXXX ranges.
std::string gbnf_digit_range(const std::vector<int>& lo, const std::vector<int>& hi, int base);

// A compiled regex: a GBNF expression, and the bounds of its matches' lengths in code points.
struct RegexFragment {
  std::string expression;
  size_t min_length = 0;
  std::optional<size_t> max_length;  // nullopt: unbounded
};

// How a regex is applied: `search` finds a match anywhere (JSON Schema's `pattern`: an
// alternative without `^` may have anything before it, one without `$` anything after it);
// `full` requires the whole text to match (guided_regex, --regex), with or without `^ $`.
enum class RegexAnchoring { search, full };
// What the expression matches: the raw text, or the contents of a JSON string (between the
// quotes) whose decoded value the regex accepts, every character raw or escaped.
enum class RegexTarget { raw_text, json_string_contents };

// Compiles `pattern`; the rules it needs are added to `rules`. Throws Error ("regex /../: ...")
// naming an unsupported construct and its position (0-based code point index).
RegexFragment compile_regex(GbnfRules& rules, std::string_view pattern, RegexAnchoring anchoring, RegexTarget target);

// The complement, for JSON Schema's patternProperties (keys a pattern does not match): an
// expression for the contents of the JSON strings in which `pattern` finds no match (search
// semantics). Only one class with a quantifier, anchored at either, both or no end, is handled
// (`^[a-z_]+$`, `\w+`, `^x{2,}`): `handled` is false otherwise. `expression` is nullopt when
// the pattern matches every string (the complement is empty).
struct RegexComplement {
  bool handled = false;
  std::optional<std::string> expression;
};
RegexComplement compile_regex_complement(GbnfRules& rules, std::string_view pattern);

// A whole grammar whose root matches exactly the texts `pattern` fully matches.
std::string regex_to_gbnf(std::string_view pattern);

}  // namespace nucleus
