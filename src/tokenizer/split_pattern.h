// One pre-tokenizer regular expression, compiled by PCRE2 (UTF-8, Unicode properties, JIT).
//
// Patterns are written as in Hugging Face tokenizer.json / llama.cpp: \p{L}, \p{N}, lookahead
// (?!\S), alternation order deciding between matches. Two adjustments make PCRE2 agree with them:
//   - \s and \S mean Unicode White_Space (tab..CR, space, U+0085, U+00A0, U+1680, U+2000..U+200A,
//     U+2028, U+2029, U+202F, U+205F, U+3000); PCRE2's own \s omits U+0085.
//   - $ matches only at the very end (no "before a final newline").
// Invalid UTF-8 in the subject never matches a pattern item (PCRE2_MATCH_INVALID_UTF), so such bytes
// end up in the gaps between matches and survive tokenization unchanged.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nucleus {

class SplitPattern {
 public:
  // Per-call match state; reusable across patterns and calls, not across threads.
  class Scratch {
   public:
    Scratch();
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    friend class SplitPattern;
    struct State;
    std::unique_ptr<State> state_;
  };

  explicit SplitPattern(std::string_view pattern);  // throws Error with PCRE2's message and offset
  ~SplitPattern();
  SplitPattern(SplitPattern&&) noexcept;
  SplitPattern& operator=(SplitPattern&&) noexcept;

  // Cuts `subject` into consecutive pieces: every match, and every stretch between matches, in
  // order; their concatenation is `subject`. The subject is matched on its own, so lookahead stops
  // at its end. Appends the pieces (views into `subject`) to `out`.
  void split(std::string_view subject, Scratch& scratch, std::vector<std::string_view>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;  // as given, before the \s rewrite
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace nucleus
