// Checks a Grammar can be run: every rule has an alternative, every reference names a rule, and no
// rule can reach itself without consuming a byte (left recursion: the matcher would never stop
// expanding it). Throws Error naming the rule.
#pragma once
#include "structured/grammar.h"

namespace nucleus {

void check_grammar(const Grammar& grammar);

}  // namespace nucleus
