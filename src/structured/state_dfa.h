// GrammarAutomaton determinized lazily: every distinct state (a set of stacks) gets a small id,
// and transitions (id, byte) → id are memoized in one flat table, so a trie walk reads one array
// entry per trie node whatever the number of live stacks (several property keys, enum values and
// anyOf branches are live at once in JSON Schema grammars; the automaton's per-stack steps and
// their merge cost ~10× more).
//
// Bytes that no symbol of the grammar tells apart (every `bytes` range holds all of them or none)
// share a class; a row holds one entry per class (JSON grammars have a few dozen, not 256).
// Shapes: row(id)[class] = the next id, or kUnknown until first asked; rows live in blocks of
// kBlockStates rows so that growing never copies them (a copy of tens of MB stalled one mask).
// Invariants: id 0 (kDead) is the empty state (no state holds a placeholder on top) and steps to itself; states_[id] is sorted and unique
// (GrammarAutomaton::State); equal states have equal ids. clear() drops every id (the caller
// holds none across it). Not thread-safe (like the automaton it reads).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "structured/grammar_matcher.h"

namespace nucleus {

class StateDfa {
 public:
  explicit StateDfa(std::shared_ptr<GrammarAutomaton> automaton);

  static constexpr uint32_t kDead = 0;

  uint32_t intern(const GrammarAutomaton::State& state);
  uint32_t next(uint32_t id, uint8_t byte) {
    uint32_t entry = row(id)[class_of_[byte]];
    if (entry == kUnknown) entry = compute(id, byte);
    escaped_ |= entry >> kEscapedBit;
    return entry & kIdMask;
  }
  // States may hold stacks over placeholders (GrammarAutomaton::placeholder). A step in which a
  // stack returns into its placeholder "escapes": the stack leaves the state (what it does next
  // depends on the context left out) and the flag below is set, until cleared. The state's other
  // stacks go on exactly as they would over any context.
  bool escaped() const { return escaped_ != 0; }
  void set_escaped(bool escaped) { escaped_ = escaped ? 1 : 0; }
  // For a step that escaped: the numbers of the placeholders its stacks returned into, as an
  // index into escape_set() (stable until the end: sets are few).
  uint32_t escape_of(uint32_t id, uint8_t byte) const { return escapes_.at(key(id, byte)); }
  const std::vector<uint32_t>& escape_set(uint32_t set) const { return escape_sets_[set]; }
  const GrammarAutomaton::State& state(uint32_t id) const { return *states_[id]; }
  bool accepting(uint32_t id) const { return GrammarAutomaton::accepting(*states_[id]); }
  size_t size() const { return states_.size(); }
  uint32_t num_classes() const { return n_classes_; }
  GrammarAutomaton& automaton() { return *automaton_; }
  // Forgets every state but kDead (the memory bound: callers clear between masks).
  void clear();

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  static constexpr uint32_t kEscapedBit = 31;  // a row entry: the next id, and this bit when the step escapes
  static constexpr uint32_t kIdMask = (1u << kEscapedBit) - 1;
  static constexpr uint32_t kBlockBits = 10;  // rows are allocated kBlockStates at a time, never moved
  static constexpr uint32_t kBlockStates = 1u << kBlockBits;
  uint32_t compute(uint32_t id, uint8_t byte);
  uint64_t key(uint32_t id, uint8_t byte) const { return (uint64_t{id} << 8) | class_of_[byte]; }
  uint32_t* row(uint32_t id) const { return blocks_[id >> kBlockBits].get() + (id & (kBlockStates - 1)) * n_classes_; }

  struct StateHash {
    size_t operator()(const GrammarAutomaton::State& s) const;
  };
  std::shared_ptr<GrammarAutomaton> automaton_;
  uint8_t class_of_[256] = {};
  uint32_t n_classes_ = 1;
  std::unordered_map<GrammarAutomaton::State, uint32_t, StateHash> ids_;
  std::vector<const GrammarAutomaton::State*> states_;  // per id: its key in ids_ (nodes are stable)
  std::vector<std::unique_ptr<uint32_t[]>> blocks_;  // rows of ids [k * kBlockStates, (k + 1) * kBlockStates)
  GrammarAutomaton::State scratch_;
  uint32_t escaped_ = 0;
  std::unordered_map<uint64_t, uint32_t> escapes_;        // key(id, byte) of an escaping step → its set
  std::vector<std::vector<uint32_t>> escape_sets_;        // placeholder numbers, sorted
  std::map<std::vector<uint32_t>, uint32_t> escape_set_ids_;
};

}  // namespace nucleus
