// ConstraintTables (token_mask.h): masks shared between the places a rule is used.
//
// A state's stacks are cut at one height: the frames at height H (counted from the bottom) and
// below are the context, replaced by placeholders; H is one below the lowest stack's top and the
// lowest frame one byte returns into, so every stack keeps at least its top frame. Then a token's bytes that stay above the cut behave the same
// in every context; a return into a placeholder "escapes" (state_dfa.h) and only the context can
// say what follows. The shared state's mask is computed once (constraint_tables.cpp, with the
// escapes recorded instead of followed); each context runs just the escaped tokens from its own
// state. Example: inside a "uri" string every property using the format has the same shared state;
// the tokens that close the string (`"`, `",`, `"}`) escape, the tens of thousands that continue it
// do not.
#include <algorithm>
#include <unordered_map>

#include "structured/token_mask.h"

namespace nucleus {

bool ConstraintTables::without_context(const GrammarAutomaton::State& state, GrammarAutomaton::State& out,
                                       std::vector<uint32_t>& contexts) {
  GrammarAutomaton& automaton = *automaton_;
  // Below every stack's top, and below every frame a single byte returns into (else nearly every
  // token would escape: a pattern's characters are rules of their own, each returning into it).
  uint32_t lowest = UINT32_MAX;
  for (uint32_t node : state)
    lowest = std::min(lowest, node == GrammarAutomaton::kAccepted ? 0 : automaton.return_height(node));
  if (lowest == UINT32_MAX || lowest < 2) return false;  // a stack at the bottom: no context to cut
  const uint32_t cut = lowest - 1;

  // Per stack: the positions of its frames above the cut (top first), and the frame at the cut.
  struct Cut {
    std::vector<uint32_t> frames;  // nodes above the cut, top first
    std::vector<uint32_t> positions;
    uint32_t context;
  };
  std::vector<Cut> cuts(state.size());
  for (size_t i = 0; i < state.size(); ++i) {
    uint32_t node = state[i];
    while (automaton.height(node) > cut) {
      cuts[i].frames.push_back(node);
      cuts[i].positions.push_back(automaton.position(node));
      node = automaton.parent(node);
    }
    cuts[i].context = node;
  }
  // Placeholders numbered in the order of the stacks' positions, so that the same rule state in
  // two contexts gets the same shared state.
  std::stable_sort(cuts.begin(), cuts.end(), [](const Cut& a, const Cut& b) { return a.positions < b.positions; });
  contexts.clear();
  out.clear();
  for (const Cut& c : cuts) {
    auto at = std::find(contexts.begin(), contexts.end(), c.context);
    if (at == contexts.end()) at = contexts.insert(contexts.end(), c.context);
    uint32_t node = automaton.placeholder(static_cast<uint32_t>(at - contexts.begin()));
    for (size_t f = c.frames.size(); f-- > 0;) node = automaton.with_parent(c.frames[f], node);
    out.push_back(node);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return true;
}

const ConstraintTables::SharedMask& ConstraintTables::shared_mask(const GrammarAutomaton::State& shared) {
  auto it = shared_masks_.find(shared);
  if (it != shared_masks_.end()) return it->second;
  SharedMask result;
  escapes_ = {};
  compute(dfa_.intern(shared), result.allowed);
  result.open = std::move(escapes_);
  escapes_ = {};
  return shared_masks_.emplace(shared, std::move(result)).first->second;
}

void ConstraintTables::resolve(const SharedMask& shared, const std::vector<uint32_t>& contexts, TokenMask& mask) {
  // After a step that returned into placeholders, the context goes on from the frames they stand
  // for; the shared state's other stacks went on in the shared walk. Stacks step independently,
  // so a token lives when either part does. The resumed states hold no placeholder: nothing
  // escapes here.
  std::unordered_map<uint32_t, uint32_t> resumed;  // escape set → DFA state
  GrammarAutomaton::State part, state;
  auto resume = [&](uint32_t set) {
    auto [it, added] = resumed.try_emplace(set, StateDfa::kDead);
    if (added) {
      state.clear();
      for (uint32_t k : dfa_.escape_set(set)) {
        automaton_->resume(contexts.at(k), part);
        state.insert(state.end(), part.begin(), part.end());
      }
      std::sort(state.begin(), state.end());
      state.erase(std::unique(state.begin(), state.end()), state.end());
      it->second = dfa_.intern(state);
    }
    return it->second;
  };
  for (const Escapes::Token& open : shared.open.tokens) {
    if (mask.allows(open.token)) continue;
    const std::string& bytes = vocabulary_->bytes_of(open.token);
    uint32_t at = resume(open.set);
    for (size_t i = open.offset; i < bytes.size() && at != StateDfa::kDead; ++i) at = dfa_.next(at, static_cast<uint8_t>(bytes[i]));
    if (at != StateDfa::kDead) mask.allow(open.token);
  }
  for (const Escapes::Subtree& open : shared.open.subtrees) {
    const uint32_t at = resume(open.set);
    if (at != StateDfa::kDead) visit(*open.trie, open.node, at, open.depth, mask);
  }
}

}  // namespace nucleus
