// Runs a parsed grammar on a sample text byte by byte (the structured-output targets). The matcher
// keeps one parse stack per way of reading the text so far; an ambiguous grammar (e.g.
// `root ::= line{2,4}` with `line ::= [^\n] root*`) doubles them at every byte until the matcher's
// bound (GrammarAutomaton::kMaxLiveStacks) makes it an Error. That Error ends the sample: it is the
// designed answer, not a finding.
#pragma once
#include <memory>
#include <string_view>

#include "core/error.h"
#include "structured/grammar.h"
#include "structured/grammar_matcher.h"

namespace nucleus::fuzz {

// The number of leading bytes of `sample` the grammar takes (stopping early if it is too ambiguous).
inline size_t bounded_prefix_match(const std::shared_ptr<const Grammar>& grammar, std::string_view sample) {
  size_t taken = 0;
  try {
    GrammarMatcher matcher(std::make_shared<GrammarAutomaton>(grammar));
    for (char c : sample) {
      if (!matcher.accept(std::string_view(&c, 1))) break;
      ++taken;
    }
    if (taken > 0) {
      (void)matcher.accepting();
      matcher.rollback(1);
    }
  } catch (const Error& e) {
    if (std::string_view(e.what()).find("too ambiguous") == std::string_view::npos) throw;
  }
  return taken;
}

}  // namespace nucleus::fuzz
