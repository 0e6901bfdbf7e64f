// ConstraintTables (token_mask.h): the allowed-token mask of a grammar state, by a walk of the
// vocabulary trie over the lazily determinized automaton (state_dfa.h), with the plain tokens
// (whole JSON-string characters) decided in blocks wherever the state treats every plain character
// alike (a free string loops; a bounded string steps through a chain of states).
#include <algorithm>

#include "structured/token_mask.h"

namespace nucleus {

size_t ConstraintTables::StateHash::operator()(const GrammarAutomaton::State& s) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t v : s) h = (h ^ v) * 1099511628211ull;
  return static_cast<size_t>(h);
}

ConstraintTables::ConstraintTables(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabularyTrie> vocabulary,
                                   size_t max_masks)
    : automaton_(std::make_shared<GrammarAutomaton>(std::move(grammar))),
      vocabulary_(std::move(vocabulary)),
      max_masks_(max_masks),
      dfa_(automaton_) {}

void ConstraintTables::walk(const TokenTrie& trie, uint32_t trie_node, uint32_t here, size_t depth, TokenMask& mask) {
  const TokenTrie::Node& node = trie.nodes[trie_node];
  for (uint32_t c = node.first_child; c < node.first_child + node.num_children; ++c) step_into(trie, c, here, depth, mask);
}

void ConstraintTables::step_into(const TokenTrie& trie, uint32_t c, uint32_t here, size_t depth, TokenMask& mask) {
  const TokenTrie::Node& child = trie.nodes[c];
  dfa_.set_escaped(false);
  const uint32_t next = dfa_.next(here, child.byte);
  if (dfa_.escaped())  // what the context does after this byte: resolve()
    escapes_.subtrees.push_back({&trie, c, static_cast<uint32_t>(depth + 1), dfa_.escape_of(here, child.byte)});
  if (next != StateDfa::kDead) visit(trie, c, next, depth + 1, mask);
}

void ConstraintTables::visit(const TokenTrie& trie, uint32_t c, uint32_t here, size_t depth, TokenMask& mask) {
  const TokenTrie::Node& node = trie.nodes[c];
  if (node.num_children > 0 && holds_a_loop(here)) {
    // A free string (or a union with one) from here on: no walk (allow_subtree_from_loop).
    allow_subtree_from_loop(trie, c, depth, here, mask);
    return;
  }
  for (uint32_t t = node.first_token; t < node.first_token + node.num_tokens; ++t) mask.allow(trie.tokens[t]);
  if (node.num_children > 0) walk(trie, c, here, depth, mask);
}

bool ConstraintTables::loops(uint32_t id) {
  if (id >= loops_.size()) loops_.resize(dfa_.size() + 64, -1);
  if (loops_[id] < 0) {
    // A step that escapes (state_dfa.h) depends on the context: then the answer is no.
    const bool outer = dfa_.escaped();
    dfa_.set_escaped(false);
    const bool yes = keeps_on_plain_characters(id) && !dfa_.escaped();
    dfa_.set_escaped(outer);
    if (id >= loops_.size()) loops_.resize(dfa_.size() + 64, -1);  // the check grew the DFA
    loops_[id] = yes ? 1 : 0;
    if (yes) {
      loops_by_first_stack_[dfa_.state(id).front()].push_back(id);
      ++n_loop_states_;
    }
  }
  return loops_[id] == 1;
}

bool ConstraintTables::holds_a_loop(uint32_t id) {
  if (loops(id)) return true;
  if (id >= holds_loop_.size()) holds_loop_.resize(dfa_.size() + 64, 0);
  if (holds_loop_[id] == 1) return true;
  if (holds_loop_[id] == n_loop_states_ + 2) return false;  // no looping state found since
  const GrammarAutomaton::State& state = dfa_.state(id);
  bool yes = false;
  for (size_t i = 0; i < state.size() && !yes; ++i) {
    auto it = loops_by_first_stack_.find(state[i]);
    if (it == loops_by_first_stack_.end()) continue;
    for (uint32_t loop : it->second) {
      const GrammarAutomaton::State& core = dfa_.state(loop);
      if (core.size() <= state.size() - i && std::includes(state.begin() + i, state.end(), core.begin(), core.end())) {
        yes = true;
        break;
      }
    }
  }
  holds_loop_[id] = yes ? 1 : static_cast<uint32_t>(n_loop_states_ + 2);
  return yes;
}

void ConstraintTables::allow_subtree_from_loop(const TokenTrie& trie, uint32_t c, size_t depth, uint32_t id, TokenMask& mask) {
  // `id` holds a looping state, which keeps any plain rest alive, so a token whose rest is plain
  // is allowed as it stands; the others (a quote, an escape, a control byte, a broken character
  // ahead) are run through the automaton from `id`, one by one.
  const TokenTrie::Node& node = trie.nodes[c];
  for (uint32_t k = node.subtree_begin; k < node.subtree_end; ++k) {
    const int32_t token = trie.sorted[k];
    if (depth < 64 ? (trie.plain_from_bits[k] >> depth) & 1 : vocabulary_->plain_from(token, depth)) {
      mask.allow(token);
      continue;
    }
    run_rest(token, depth, id, mask);
  }
}

void ConstraintTables::run_rest(int32_t token, size_t offset, uint32_t id, TokenMask& mask) {
  const std::string& bytes = vocabulary_->bytes_of(token);
  const size_t open = escapes_.tokens.size();
  for (size_t i = offset; i < bytes.size() && id != StateDfa::kDead; ++i) {
    dfa_.set_escaped(false);
    const uint32_t next = dfa_.next(id, static_cast<uint8_t>(bytes[i]));
    if (dfa_.escaped()) escapes_.tokens.push_back({token, static_cast<uint32_t>(i + 1), dfa_.escape_of(id, static_cast<uint8_t>(bytes[i]))});
    id = next;
  }
  if (id != StateDfa::kDead) {
    mask.allow(token);  // some stack lives whatever the context
    escapes_.tokens.resize(open);
  }
}

namespace {

// The valid UTF-8 sequences (RFC 3629's table) by lead byte: the continuation-byte ranges after it.
struct Utf8Group {
  uint8_t lo, hi;
  int n;
  uint8_t ranges[3][2];
};
constexpr Utf8Group kUtf8Groups[] = {
    {0xC2, 0xDF, 1, {{0x80, 0xBF}}},
    {0xE0, 0xE0, 2, {{0xA0, 0xBF}, {0x80, 0xBF}}},
    {0xE1, 0xEC, 2, {{0x80, 0xBF}, {0x80, 0xBF}}},
    {0xED, 0xED, 2, {{0x80, 0x9F}, {0x80, 0xBF}}},
    {0xEE, 0xEF, 2, {{0x80, 0xBF}, {0x80, 0xBF}}},
    {0xF0, 0xF0, 3, {{0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}}},
    {0xF1, 0xF3, 3, {{0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}}},
    {0xF4, 0xF4, 3, {{0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}}},
};

const Utf8Group* utf8_group(uint8_t lead) {
  for (const Utf8Group& g : kUtf8Groups)
    if (lead >= g.lo && lead <= g.hi) return &g;
  return nullptr;
}

bool is_plain_ascii(unsigned b) { return b >= 0x20 && b < 0x7F && b != '"' && b != '\\'; }

}  // namespace

// True when every continuation of `ranges[level..]` leads `id` to `home`.
bool ConstraintTables::returns_after(uint32_t id, uint32_t home, int level, const uint8_t (*ranges)[2], int n_ranges) {
  if (level == n_ranges) return id == home;
  uint32_t last = StateDfa::kDead;
  for (unsigned b = ranges[level][0]; b <= ranges[level][1]; ++b) {
    const uint32_t next = dfa_.next(id, static_cast<uint8_t>(b));
    if (next == StateDfa::kDead) return false;
    if (next == last) continue;  // same state as the byte before: already checked
    if (!returns_after(next, home, level + 1, ranges, n_ranges)) return false;
    last = next;
  }
  return true;
}

// True when every continuation of `ranges[level..]` leads `id` to a superset of `home`.
bool ConstraintTables::keeps_after(uint32_t id, uint32_t home, int level, const uint8_t (*ranges)[2], int n_ranges) {
  if (level == n_ranges) return includes(id, home);
  uint32_t last = StateDfa::kDead;
  for (unsigned b = ranges[level][0]; b <= ranges[level][1]; ++b) {
    const uint32_t next = dfa_.next(id, static_cast<uint8_t>(b));
    if (next == StateDfa::kDead) return false;
    if (next == last) continue;  // same state as the byte before: already checked
    if (!keeps_after(next, home, level + 1, ranges, n_ranges)) return false;
    last = next;
  }
  return true;
}

bool ConstraintTables::includes(uint32_t id, uint32_t part) {
  if (id == part) return true;
  const GrammarAutomaton::State& a = dfa_.state(id);
  const GrammarAutomaton::State& b = dfa_.state(part);
  return a.size() > b.size() && std::includes(a.begin(), a.end(), b.begin(), b.end());
}

uint32_t ConstraintTables::character_destination(uint32_t id, uint8_t first) {
  if (is_plain_ascii(first)) return dfa_.next(id, first);
  const Utf8Group* g = utf8_group(first);
  if (!g) return kNoDestination;
  const uint32_t after_lead = dfa_.next(id, first);
  if (after_lead == StateDfa::kDead) return StateDfa::kDead;
  uint32_t home = after_lead;  // along the smallest continuation bytes
  for (int level = 0; level < g->n && home != StateDfa::kDead; ++level) home = dfa_.next(home, g->ranges[level][0]);
  if (home == StateDfa::kDead) return kNoDestination;  // some continuations may live: not uniform
  return returns_after(after_lead, home, 0, g->ranges, g->n) ? home : kNoDestination;
}

uint32_t ConstraintTables::uniform_destination(uint32_t id) {
  if (id >= uniform_.size()) uniform_.resize(dfa_.size() + 64, kUnknownUniform);
  if (uniform_[id] != kUnknownUniform) return uniform_[id];
  const bool outer = dfa_.escaped();
  dfa_.set_escaped(false);
  uint32_t to = dfa_.next(id, ' ');
  for (unsigned b = 0x21; b < 0x7F && to != kNoDestination; ++b)
    if (is_plain_ascii(b) && dfa_.next(id, static_cast<uint8_t>(b)) != to) to = kNoDestination;
  for (unsigned lead = 0xC2; lead <= 0xF4 && to != kNoDestination; ++lead)
    if (character_destination(id, static_cast<uint8_t>(lead)) != to) to = kNoDestination;
  if (dfa_.escaped()) to = kNoDestination;  // the context decides: no block
  dfa_.set_escaped(outer);
  if (id >= uniform_.size()) uniform_.resize(dfa_.size() + 64, kUnknownUniform);  // the DFA grew
  uniform_[id] = to;
  return to;
}

bool ConstraintTables::keeps_on_plain_characters(uint32_t id) {
  if (id == StateDfa::kDead) return false;
  for (unsigned b = 0x20; b < 0x7F; ++b)
    if (is_plain_ascii(b) && !includes(dfa_.next(id, static_cast<uint8_t>(b)), id)) return false;
  for (const Utf8Group& g : kUtf8Groups)
    for (unsigned lead = g.lo; lead <= g.hi; ++lead) {
      const uint32_t next = dfa_.next(id, static_cast<uint8_t>(lead));
      if (next == StateDfa::kDead || !keeps_after(next, id, 0, g.ranges, g.n)) return false;
    }
  return true;
}

const TokenMask& ConstraintTables::mask_for(const GrammarAutomaton::State& state) {
  auto it = masks_.find(state);
  if (it != masks_.end()) return it->second;
  if (masks_.size() >= max_masks_) masks_.clear();
  if (shared_masks_.size() >= max_masks_) shared_masks_.clear();
  // The DFA's memory bound: at most ~kMaxDfaStates rows and states between masks.
  constexpr size_t kMaxDfaStates = 1 << 16;  // ~40 MB at most with a hundred byte classes
  if (dfa_.size() > kMaxDfaStates) {
    dfa_.clear();
    loops_.clear();
    uniform_.clear();
    loops_by_first_stack_.clear();
    n_loop_states_ = 0;
    holds_loop_.clear();
  }
  TokenMask mask;
  if (without_context(state, scratch_state_, scratch_contexts_)) {
    // The part every context shares, then what this context decides (constraint_tables_context.cpp).
    const SharedMask& shared = shared_mask(scratch_state_);
    mask = shared.allowed;
    resolve(shared, scratch_contexts_, mask);
  } else {
    escapes_ = {};
    compute(dfa_.intern(state), mask);
  }
  if (GrammarAutomaton::accepting(state))
    for (int32_t eog : vocabulary_->end_of_generation_ids()) mask.allow(eog);
  return masks_.emplace(state, std::move(mask)).first->second;
}

void ConstraintTables::compute(uint32_t id, TokenMask& mask) {
  // Plain tokens (VocabularyTrie::plain_tokens) are decided in blocks where the state allows it,
  // for the first bytes marked `covered`; the other tokens starting with a covered byte (the
  // special trie's) and every token starting with an uncovered byte are walked.
  bool covered[256] = {};
  if (!plain_block_by_chain(id, covered, mask)) plain_block_by_first_byte(id, covered, mask);
  walk_root(vocabulary_->all(), id, covered, false, mask);
  walk_root(vocabulary_->special(), id, covered, true, mask);
}

bool ConstraintTables::plain_block_by_chain(uint32_t id, bool* covered, TokenMask& mask) {
  // S0 = id, S(k+1) = uniform_destination(Sk): a plain token of n characters ends in Sn, so it is
  // allowed exactly when Sn is not dead (dead stays dead). The chain ends at a dead state, at a
  // state that leads to itself (all longer tokens live), or after kChainChars steps (the longer
  // tokens are run from there).
  uint32_t at = id;
  size_t chain = 0;  // plain tokens of up to `chain` characters are allowed
  bool unbounded = false;
  for (size_t k = 1; k <= VocabularyTrie::kChainChars; ++k) {
    const uint32_t to = uniform_destination(at);
    if (to == kNoDestination) return false;
    if (to == StateDfa::kDead) break;
    chain = k;
    if (to == at) {
      unbounded = true;
      break;
    }
    at = to;
  }
  mask = unbounded ? vocabulary_->plain_tokens() : vocabulary_->plain_tokens_up_to(chain);
  if (!unbounded && chain == VocabularyTrie::kChainChars) {
    for (const auto& [token, offset] : vocabulary_->long_plain_tokens()) {
      run_rest(token, offset, at, mask);
    }
  }
  for (unsigned b = 0; b < 256; ++b) covered[b] = vocabulary_->plain_tokens_starting_with(static_cast<uint8_t>(b)) != nullptr;
  return true;
}

void ConstraintTables::plain_block_by_first_byte(uint32_t id, bool* covered, TokenMask& mask) {
  // A first byte whose every character leads to one state that loops on plain characters (a key
  // that is not a declared name, once its first character differs from theirs): its plain tokens
  // are all allowed.
  int n_covered = 0, n_plain_first = 0;
  for (unsigned b = 0; b < 256; ++b) {
    if (!vocabulary_->plain_tokens_starting_with(static_cast<uint8_t>(b))) continue;
    ++n_plain_first;
    dfa_.set_escaped(false);
    const uint32_t to = character_destination(id, static_cast<uint8_t>(b));
    if (dfa_.escaped()) continue;  // the context decides: walked
    if (to != kNoDestination && to != StateDfa::kDead && holds_a_loop(to)) {
      covered[b] = true;
      ++n_covered;
    }
  }
  const size_t n_words = (static_cast<size_t>(vocabulary_->n_vocab()) + 63) / 64;
  if (2 * n_covered > n_plain_first) {  // fewer blocks to clear than to set
    mask = vocabulary_->plain_tokens();
    for (unsigned b = 0; b < 256; ++b) {
      const TokenMask* first = vocabulary_->plain_tokens_starting_with(static_cast<uint8_t>(b));
      if (!first || covered[b]) continue;
      for (size_t w = 0; w < n_words; ++w) mask.words[w] &= ~first->words[w];
    }
  } else {
    mask.words.assign(n_words, 0);
    for (unsigned b = 0; b < 256; ++b) {
      if (!covered[b]) continue;
      const TokenMask& first = *vocabulary_->plain_tokens_starting_with(static_cast<uint8_t>(b));
      for (size_t w = 0; w < n_words; ++w) mask.words[w] |= first.words[w];
    }
  }
}

void ConstraintTables::walk_root(const TokenTrie& trie, uint32_t id, const bool* covered, bool want_covered, TokenMask& mask) {
  const TokenTrie::Node& root = trie.nodes[0];
  for (uint32_t c = root.first_child; c < root.first_child + root.num_children; ++c)
    if (covered[trie.nodes[c].byte] == want_covered) step_into(trie, c, id, 0, mask);
}

}  // namespace nucleus
