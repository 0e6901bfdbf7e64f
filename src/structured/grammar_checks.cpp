#include "structured/grammar_checks.h"

#include "core/error.h"

namespace nucleus {

void check_grammar(const Grammar& g) {
  const size_t n = g.num_rules();
  if (g.root >= n) throw Error("grammar: the root rule does not exist");
  for (size_t r = 0; r < n; ++r)
    if (g.alternatives[r].empty()) throw Error("grammar: rule '" + g.rule_names[r] + "' has no alternative");
  for (const GrammarSymbol& s : g.code)
    if (s.kind == GrammarSymbol::Kind::rule && s.rule >= n) throw Error("grammar: a reference to a rule that does not exist");

  // Nullable rules (can match the empty string), to a fixed point.
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t pos : g.alternatives[r]) {
        bool all = true;
        for (uint32_t p = pos; g.code[p].kind != GrammarSymbol::Kind::end && all; ++p)
          all = g.code[p].kind == GrammarSymbol::Kind::rule && nullable[g.code[p].rule];
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  // Rules each rule can start with without consuming anything; a cycle is left recursion.
  std::vector<std::vector<uint32_t>> leading(n);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t pos : g.alternatives[r])
      for (uint32_t p = pos; g.code[p].kind == GrammarSymbol::Kind::rule; ++p) {
        leading[r].push_back(g.code[p].rule);
        if (!nullable[g.code[p].rule]) break;
      }
  std::vector<char> color(n, 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> path;
  for (uint32_t start = 0; start < n; ++start) {
    if (color[start]) continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == leading[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t child = leading[r][next++];
      if (color[child] == 1) throw Error("grammar: rule '" + g.rule_names[child] + "' is left-recursive");
      if (color[child] == 0) {
        color[child] = 1;
        path.push_back({child, 0});
      }
    }
  }
}

}  // namespace nucleus
