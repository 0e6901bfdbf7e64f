// Runs a Grammar over bytes: the set of parse stacks after each byte, as a pushdown automaton.
//
// A stack is a chain of frames; the top frame's position is a `bytes` symbol (the next byte it
// can take), the frames below are return positions. Frames are hash-consed — one node per
// (position, parent) — so a stack is a single node id, equal stacks have equal ids, and a state
// (the set of live stacks) is a sorted vector of ids that can be compared and cached. Node 0 is
// the empty stack: the root rule is complete. A rule reference in tail position pushes no frame,
// so repetition (`x*` = `r ::= x r |`) keeps the stack depth, and the state, constant.
//
// A node's successors (the nodes after its top symbol takes a byte — the same for every byte it
// takes) are memoized; StateDfa (state_dfa.h) memoizes whole states' transitions on top, so
// walking a vocabulary trie (token_mask.h) mostly reads tables. history() keeps every state since
// the start: rollback() pops them (for speculative drafts that were rejected).
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"

namespace nucleus {

// The stack nodes of one grammar and the memoized transitions between them. Shared by every
// matcher of the same compiled constraint on one thread (not thread-safe: each engine thread owns
// its matchers; compiled constraints are copied per request).
class GrammarAutomaton {
 public:
  explicit GrammarAutomaton(std::shared_ptr<const Grammar> grammar);

  using State = std::vector<uint32_t>;  // sorted, unique stack node ids; empty = dead
  static constexpr uint32_t kAccepted = 0;  // the empty stack
  // A state with more stacks is an Error (advance() and the constructor throw): an ambiguous
  // grammar (`root ::= line{2,4}`, `line ::= [^\n] root*`) can double them at every byte, and a
  // mask walks the vocabulary once per state. JSON Schema grammars stay under ~100.
  static constexpr size_t kMaxLiveStacks = 1024;

  const State& initial_state() const { return initial_; }
  // The state after `byte` from `state`, into `out` (cleared first). Throws Error past kMaxLiveStacks.
  void advance(const State& state, uint8_t byte, State& out);
  // True when some stack of `state` can take `byte` next.
  bool can_take(const State& state, uint8_t byte) const {
    for (uint32_t node : state) {
      if (node == kAccepted || is_placeholder(node)) continue;
      const GrammarSymbol& sym = grammar_->code[nodes_[node].pos];
      if (byte >= sym.lo && byte <= sym.hi) return true;
    }
    return false;
  }
  static bool accepting(const State& state) { return !state.empty() && state.front() == kAccepted; }

  size_t num_nodes() const { return nodes_.size(); }
  const Grammar& grammar() const { return *grammar_; }

  // Stacks without their bottom (constraint_tables_context.cpp: one mask shared by every place a
  // rule is used). A placeholder node stands for "the frames below, whichever they are": a stack
  // that returns into one stops there, with the placeholder as its top, which takes no byte — its
  // context decides what follows. Placeholder k is the same node in every state.
  uint32_t placeholder(uint32_t k);
  bool is_placeholder(uint32_t node) const { return nodes_[node].pos == kPlaceholderPos; }
  // The stack `node` with the frame below it replaced: frames are re-interned above `parent`.
  uint32_t with_parent(uint32_t node, uint32_t parent) { return intern(nodes_[node].pos, parent); }
  uint32_t parent(uint32_t node) const { return nodes_[node].parent; }
  // The stacks after a return into `frame` (what its context does once the part above is done),
  // into `out` (cleared, sorted).
  void resume(uint32_t frame, State& out);
  uint32_t position(uint32_t node) const { return nodes_[node].pos; }
  // Frames from `node` down to the bottom: kAccepted 0, a single frame 1 (placeholders: 1).
  uint32_t height(uint32_t node) const { return heights_[node]; }
  // The height of the lowest frame a byte taken by `node`'s top may return into (height(node)
  // when the rest of its alternative cannot be empty).
  uint32_t return_height(uint32_t node) const;

 private:
  static constexpr uint32_t kPlaceholderPos = UINT32_MAX;
  struct Node {
    uint32_t pos;     // top frame: a bytes symbol; below: a return position (kPlaceholderPos: a placeholder)
    uint32_t parent;  // the frame below; kAccepted at the bottom (placeholders: their number)
  };
  uint32_t intern(uint32_t pos, uint32_t parent);
  // Pushes every top node reachable from executing `pos` with `parent` below, without consuming.
  void expand(uint32_t pos, uint32_t parent, State& out, int depth);
  // The nodes after `node` takes `byte` (memoized per node); empty when the byte does not fit.
  std::pair<const uint32_t*, size_t> step(uint32_t node, uint8_t byte);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> heights_;  // per node
  std::vector<bool> rest_nullable_;  // per position in code: the symbols from it to its `end` can match nothing
  std::unordered_map<uint64_t, uint32_t> node_ids_;  // (pos << 32 | parent) → node
  // expand() from one call at depth 0: (pos << 32 | parent) → the number of the last expansion that
  // reached it. A state reached twice in one expansion adds nothing new (its tops are already out),
  // and without this check nullable rules in a row (`line{2,53}` with `line ::= | [^]*`) are walked
  // along every one of their 2^53 ways of matching nothing.
  std::unordered_map<uint64_t, uint32_t> expanded_in_;
  uint32_t expansion_ = 0;
  // Memoized steps: a node's successors (the stacks after its top symbol takes any byte it
  // matches) are the same for every such byte, so one entry per node: 1 + an index into
  // step_spans_ (0: not computed yet); a span is [offset, count) in step_pool_.
  std::vector<uint32_t> successors_;
  std::vector<std::pair<uint32_t, uint32_t>> step_spans_;
  std::vector<uint32_t> step_pool_;
  State initial_;
  State scratch_;
};

// One parse in progress: the automaton's state after each byte taken so far.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<GrammarAutomaton> automaton);

  // Takes the bytes if every one fits (and returns true); otherwise changes nothing.
  bool accept(std::string_view bytes);
  bool accepting() const { return GrammarAutomaton::accepting(state()); }
  bool dead() const { return state().empty(); }
  const GrammarAutomaton::State& state() const { return history_.back(); }
  // Undoes the last `n` successful accept() calls.
  void rollback(size_t n);
  size_t num_accepted() const { return sizes_.size(); }
  GrammarAutomaton& automaton() { return *automaton_; }

 private:
  std::shared_ptr<GrammarAutomaton> automaton_;
  std::vector<GrammarAutomaton::State> history_;  // one state per byte taken, and the initial one
  std::vector<size_t> sizes_;                     // bytes per accept() call, for rollback
};

// True when the whole of `text` is a sentence of the grammar (the root rule complete at its end).
bool grammar_matches(const Grammar& grammar, std::string_view text);
// The number of leading bytes of `text` the grammar can take (text.size() when all fit).
size_t grammar_prefix_length(const Grammar& grammar, std::string_view text);

}  // namespace nucleus
