// A context-free grammar over bytes: what every constraint (GBNF, JSON Schema, regex, choices)
// compiles to, and what GrammarMatcher runs.
//
// Layout (as in llama.cpp's llama_grammar, but over bytes instead of code points): every
// alternative of every rule is a run of symbols in one array, `code`, closed by an `end` symbol.
// A symbol is a byte range [lo, hi] or a reference to a rule. Code points never appear: a
// character class is compiled to the UTF-8 byte sequences of its ranges, so a token that ends in
// the middle of a character is matched byte by byte like any other.
//
// Grammars are built by GrammarBuilder (grammar_builder.h) or parsed from GBNF (parse_gbnf). A
// built grammar is checked: every referenced rule has an alternative, and no rule is left-recursive
// (a rule reachable from itself without consuming a byte would loop forever).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nucleus {

struct GrammarSymbol {
  enum class Kind : uint8_t { bytes, rule, end };
  Kind kind = Kind::end;
  uint8_t lo = 0, hi = 0;  // kind == bytes: the byte range matched, inclusive
  uint32_t rule = 0;       // kind == rule: the rule referenced
};

struct Grammar {
  std::vector<GrammarSymbol> code;                 // every alternative, each closed by `end`
  std::vector<std::vector<uint32_t>> alternatives; // per rule: the positions in `code` where its alternatives start
  std::vector<std::string> rule_names;             // per rule, for error messages
  uint32_t root = 0;

  size_t num_rules() const { return alternatives.size(); }
};

// Parses llama.cpp's GBNF (grammars/README.md there): `name ::= alternatives`, "literals" with
// \n \r \t \" \\ \xHH \uHHHH \UHHHHHHHH escapes, [character classes] with ranges and ^, `.`,
// (groups), `|`, postfix `*` `+` `?` `{m}` `{m,}` `{m,n}`, `#` comments; a rule continues on the
// next line only inside parentheses or after `|`. Throws Error naming line and column for a syntax
// error, an undefined rule, a missing root rule, or left recursion.
Grammar parse_gbnf(std::string_view text, std::string_view root_rule = "root");

}  // namespace nucleus
