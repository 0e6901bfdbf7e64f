#include "structured/state_dfa.h"

#include <algorithm>

namespace nucleus {

size_t StateDfa::StateHash::operator()(const GrammarAutomaton::State& s) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t v : s) h = (h ^ v) * 1099511628211ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

StateDfa::StateDfa(std::shared_ptr<GrammarAutomaton> automaton) : automaton_(std::move(automaton)) {
  // A class starts at 0 and at every lo and hi + 1 of the grammar's byte ranges.
  bool starts[257] = {};
  starts[0] = true;
  for (const GrammarSymbol& sym : automaton_->grammar().code) {
    if (sym.kind != GrammarSymbol::Kind::bytes) continue;
    starts[sym.lo] = true;
    starts[sym.hi + 1] = true;
  }
  int cls = -1;
  for (int b = 0; b < 256; ++b) {
    if (starts[b]) ++cls;
    class_of_[b] = static_cast<uint8_t>(cls);
  }
  n_classes_ = static_cast<uint32_t>(cls + 1);
  clear();
}

void StateDfa::clear() {
  states_.clear();
  ids_.clear();
  escapes_.clear();
  blocks_.clear();
  intern(GrammarAutomaton::State{});  // kDead
  std::fill_n(row(kDead), n_classes_, kDead);
}

uint32_t StateDfa::intern(const GrammarAutomaton::State& state) {
  auto [it, added] = ids_.try_emplace(state, static_cast<uint32_t>(states_.size()));
  if (added) {
    states_.push_back(&it->first);
    if ((it->second & (kBlockStates - 1)) == 0) blocks_.push_back(std::make_unique<uint32_t[]>(size_t{kBlockStates} * n_classes_));
    std::fill_n(row(it->second), n_classes_, kUnknown);
  }
  return it->second;
}

uint32_t StateDfa::compute(uint32_t id, uint8_t byte) {
  automaton_->advance(*states_[id], byte, scratch_);
  uint32_t escaped = 0;
  if (std::any_of(scratch_.begin(), scratch_.end(), [this](uint32_t node) { return automaton_->is_placeholder(node); })) {
    std::vector<uint32_t> set;
    std::erase_if(scratch_, [&](uint32_t node) {
      if (!automaton_->is_placeholder(node)) return false;
      set.push_back(automaton_->parent(node));  // its number
      return true;
    });
    std::sort(set.begin(), set.end());
    auto [it, added] = escape_set_ids_.try_emplace(set, static_cast<uint32_t>(escape_sets_.size()));
    if (added) escape_sets_.push_back(set);
    escapes_[key(id, byte)] = it->second;
    escaped = 1u << kEscapedBit;
  }
  const uint32_t entry = intern(scratch_) | escaped;
  row(id)[class_of_[byte]] = entry;
  return entry;
}

}  // namespace nucleus
