// Pieces for composing GBNF texts (llama.cpp's dialect, read by parse_gbnf): renaming a whole
// grammar's rules so several generated grammars — each with its own `root` — can live in one text,
// the rules for "any text without a given literal" (free text up to a closing tag), and literals.
#pragma once
#include <string>
#include <string_view>

namespace nucleus {

// `gbnf` with every rule name — in definitions and in references alike — prefixed by `prefix`
// (so `root` becomes `<prefix>root`). String literals "...", character classes [...] (both with
// backslash escapes), repetition counts {m,n} and # comments are copied unchanged. The prefix must
// be made of rule-name characters [A-Za-z0-9_-] (else Error). Combining grammars is then a matter
// of concatenating their prefixed texts under prefixes none of which is a prefix of another
// (e.g. "g0-", "g1-") and of the caller's own rule names.
std::string prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix);

// Rules named `rule_name`, `rule_name-1`, ..., `rule_name-<n-1>` (n = the literal's length in code
// points; `rule_name` is the entry) matching the UTF-8 texts, possibly empty, that
//   (a) do not contain `literal`, and
//   (b) end in a way that `literal` written right after them is its first occurrence: the text
//       followed by `literal` contains `literal` only as its suffix.
// So `rule_name literal` matches exactly the texts whose first occurrence of `literal` is at their
// end: the enclosing grammar's closing tag cannot be completed early by the end of the free text.
// For a literal without a border (no proper non-empty prefix equal to a suffix — "</think>",
// "\n</parameter>", any literal whose first character occurs once) (b) follows from (a), and the
// language is exactly the texts not containing `literal`. For a bordered literal such as "abab",
// (b) also excludes e.g. the text "ab" (since "ab" + "abab" contains "abab" at 0).
//
// Built from the literal's KMP automaton over code points: state i = the longest prefix of the
// literal (i code points) that the text read so far ends with. Each state's rule reads one
// character: a character of the literal moving to a state ≠ 0 as itself, every other character
// (non-ASCII included) through one negated class [^...] back to state 0; the character that would
// complete the literal has no alternative. The rules are right-linear (every reference in tail
// position), so the matcher's stacks stay one frame deep however long the text. Throws Error when
// `literal` is empty (every text contains it) or is not valid UTF-8, or when `rule_name` has
// characters rule names cannot have.
std::string gbnf_text_without(std::string_view literal, std::string_view rule_name);

// (A GBNF string literal for a text: gbnf_literal in structured/constraint.h.)

}  // namespace nucleus
