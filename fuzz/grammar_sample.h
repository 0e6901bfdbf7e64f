// Runs a parsed grammar on a sample text byte by byte (the structured-output targets). The matcher
// keeps one parse stack per way of reading the text so far, so an ambiguous grammar (e.g.
// `root ::= line{2,4}` with `line ::= [^\n] root*`) has exponentially many after a few dozen bytes:
// a known limit (docs/RELIABILITY.md, "Known limits"), not a crash. The sample stops there, so the
// fuzzer keeps looking for real bugs instead of reporting that one as a timeout again and again.
#pragma once
#include <memory>
#include <string_view>

#include "structured/grammar.h"
#include "structured/grammar_matcher.h"

namespace nucleus::fuzz {

constexpr size_t kMaxSampleStacks = 2048;

// The number of leading bytes of `sample` the grammar takes (stopping early when the stacks pile up).
inline size_t bounded_prefix_match(const std::shared_ptr<const Grammar>& grammar, std::string_view sample) {
  GrammarMatcher matcher(std::make_shared<GrammarAutomaton>(grammar));
  size_t taken = 0;
  for (char c : sample) {
    if (!matcher.accept(std::string_view(&c, 1))) break;
    ++taken;
    if (matcher.state().size() > kMaxSampleStacks) break;
  }
  if (taken > 0) {
    (void)matcher.accepting();
    matcher.rollback(1);
  }
  return taken;
}

}  // namespace nucleus::fuzz
