#include "structured/grammar_matcher.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace nucleus {
namespace {

using Kind = GrammarSymbol::Kind;

void sort_unique(std::vector<uint32_t>& v) {
  if (v.size() < 2) return;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Expansion depth bound: only chains of nullable rules recurse without consuming, and a checked
// grammar has no cycles among them, so this is reached only by absurdly deep grammars.
constexpr int kMaxExpansionDepth = 20000;

void check_live_stacks(size_t n) {
  if (n > GrammarAutomaton::kMaxLiveStacks)
    throw Error("grammar: too ambiguous: more than " + std::to_string(GrammarAutomaton::kMaxLiveStacks) +
                " ways to parse the output so far are alive at once");
}

}  // namespace

GrammarAutomaton::GrammarAutomaton(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  nodes_.push_back(Node{0, 0});  // kAccepted: the empty stack
  heights_.push_back(0);
  // Which rules can match nothing (a fixed point), then which rests of alternatives can.
  const std::vector<GrammarSymbol>& code = grammar_->code;
  std::vector<bool> nullable(grammar_->num_rules(), false);
  auto rest_nullable = [&](uint32_t pos) {
    for (; code[pos].kind != Kind::end; ++pos)
      if (code[pos].kind == Kind::bytes || !nullable[code[pos].rule]) return false;
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < grammar_->num_rules(); ++r) {
      if (nullable[r]) continue;
      for (uint32_t start : grammar_->alternatives[r])
        if (rest_nullable(start)) {
          nullable[r] = changed = true;
          break;
        }
    }
  }
  rest_nullable_.assign(code.size(), false);
  for (size_t pos = code.size(); pos-- > 0;)
    rest_nullable_[pos] = code[pos].kind == Kind::end ||
                          (code[pos].kind == Kind::rule && nullable[code[pos].rule] && pos + 1 < code.size() && rest_nullable_[pos + 1]);
  for (uint32_t start : grammar_->alternatives[grammar_->root]) expand(start, kAccepted, initial_, 0);
  sort_unique(initial_);
  check_live_stacks(initial_.size());
}

uint32_t GrammarAutomaton::intern(uint32_t pos, uint32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(pos) << 32) | parent;
  auto [it, added] = node_ids_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (added) {
    nodes_.push_back(Node{pos, parent});
    heights_.push_back(pos == kPlaceholderPos ? 1 : heights_[parent] + 1);
  }
  return it->second;
}

uint32_t GrammarAutomaton::placeholder(uint32_t k) { return intern(kPlaceholderPos, k); }

uint32_t GrammarAutomaton::return_height(uint32_t node) const {
  uint32_t reached = heights_[node];
  uint32_t pos = nodes_[node].pos + 1, parent = nodes_[node].parent;
  while (rest_nullable_[pos] && parent != kAccepted && nodes_[parent].pos != kPlaceholderPos) {
    reached = heights_[parent];
    pos = nodes_[parent].pos;
    parent = nodes_[parent].parent;
  }
  return reached;
}

void GrammarAutomaton::resume(uint32_t frame, State& out) {
  out.clear();
  const Node f = nodes_[frame];
  expand(f.pos, f.parent, out, 0);
  sort_unique(out);
}

void GrammarAutomaton::expand(uint32_t pos, uint32_t parent, State& out, int depth) {
  if (depth > kMaxExpansionDepth) throw Error("grammar: expansion too deep (nested empty rules)");
  if (depth == 0) ++expansion_;
  const std::vector<GrammarSymbol>& code = grammar_->code;
  for (;;) {
    const auto [seen, first_time] = expanded_in_.try_emplace((static_cast<uint64_t>(pos) << 32) | parent, expansion_);
    if (!first_time) {
      if (seen->second == expansion_) return;  // this expansion has been here: its tops are in `out`
      seen->second = expansion_;
    }
    const GrammarSymbol& sym = code[pos];
    if (sym.kind == Kind::bytes) {
      out.push_back(intern(pos, parent));
      return;
    }
    if (sym.kind == Kind::end) {
      if (parent == kAccepted) {
        out.push_back(kAccepted);
        return;
      }
      if (nodes_[parent].pos == kPlaceholderPos) {  // returns into a context left out: stop there
        out.push_back(parent);
        return;
      }
      const Node frame = nodes_[parent];  // return into the frame below
      pos = frame.pos;
      parent = frame.parent;
      continue;
    }
    // A rule reference: its alternatives run above a frame that returns to pos + 1 — none when
    // pos + 1 ends the alternative (a tail call).
    const uint32_t after = pos + 1;
    const uint32_t below = code[after].kind == Kind::end ? parent : intern(after, parent);
    for (uint32_t start : grammar_->alternatives[sym.rule]) expand(start, below, out, depth + 1);
    return;
  }
}

std::pair<const uint32_t*, size_t> GrammarAutomaton::step(uint32_t node, uint8_t byte) {
  const Node n = nodes_[node];
  if (n.pos == kPlaceholderPos) return {nullptr, 0};
  const GrammarSymbol& sym = grammar_->code[n.pos];
  if (byte < sym.lo || byte > sym.hi) return {nullptr, 0};
  // Every byte the top symbol takes leads to the same stacks: what follows the symbol.
  if (node >= successors_.size()) successors_.resize(nodes_.size(), 0);
  uint32_t entry = successors_[node];
  if (entry == 0) {
    scratch_.clear();
    expand(n.pos + 1, n.parent, scratch_, 0);
    sort_unique(scratch_);
    step_spans_.emplace_back(static_cast<uint32_t>(step_pool_.size()), static_cast<uint32_t>(scratch_.size()));
    step_pool_.insert(step_pool_.end(), scratch_.begin(), scratch_.end());
    entry = static_cast<uint32_t>(step_spans_.size());
    successors_[node] = entry;  // expand() may have grown nodes_; successors_ grows on demand
  }
  const auto [offset, count] = step_spans_[entry - 1];
  return {step_pool_.data() + offset, count};
}

void GrammarAutomaton::advance(const State& state, uint8_t byte, State& out) {
  out.clear();
  if (state.size() == 1) {  // the common case: one stack, whose memoized step is sorted already
    if (state[0] == kAccepted) return;
    const auto [next, count] = step(state[0], byte);
    out.assign(next, next + count);
    check_live_stacks(out.size());
    return;
  }
  for (uint32_t node : state) {
    if (node == kAccepted) continue;
    const auto [next, count] = step(node, byte);
    out.insert(out.end(), next, next + count);
  }
  sort_unique(out);
  check_live_stacks(out.size());
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<GrammarAutomaton> automaton) : automaton_(std::move(automaton)) {
  history_.push_back(automaton_->initial_state());
}

bool GrammarMatcher::accept(std::string_view bytes) {
  const size_t before = history_.size();
  for (char c : bytes) {
    GrammarAutomaton::State next;
    automaton_->advance(history_.back(), static_cast<uint8_t>(c), next);
    if (next.empty()) {
      history_.resize(before);
      return false;
    }
    history_.push_back(std::move(next));
  }
  sizes_.push_back(bytes.size());
  return true;
}

void GrammarMatcher::rollback(size_t n) {
  if (n > sizes_.size()) throw Error("internal: grammar rollback past the start");
  for (size_t i = 0; i < n; ++i) {
    history_.resize(history_.size() - sizes_.back());
    sizes_.pop_back();
  }
}

bool grammar_matches(const Grammar& grammar, std::string_view text) {
  GrammarMatcher m(std::make_shared<GrammarAutomaton>(std::make_shared<const Grammar>(grammar)));
  return m.accept(text) && m.accepting();
}

size_t grammar_prefix_length(const Grammar& grammar, std::string_view text) {
  GrammarMatcher m(std::make_shared<GrammarAutomaton>(std::make_shared<const Grammar>(grammar)));
  size_t n = 0;
  while (n < text.size() && m.accept(text.substr(n, 1))) ++n;
  return n;
}

}  // namespace nucleus
