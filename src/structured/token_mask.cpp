#include "structured/token_mask.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace nucleus {

namespace {

// The trie of `ids` (sorted by their bytes, then id): a node per distinct prefix, built level by
// level (the children of a node are the distinct next bytes of its range of ids).
TokenTrie build_trie(std::vector<int32_t> ids, const std::vector<std::string>& pieces) {
  auto bytes = [&](int32_t id) -> const std::string& { return pieces[static_cast<size_t>(id)]; };
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return bytes(a) != bytes(b) ? bytes(a) < bytes(b) : a < b; });
  struct Pending {
    uint32_t node;
    size_t begin, end, depth;  // ids[begin, end) share the node's prefix of `depth` bytes
  };
  TokenTrie trie;
  trie.nodes.push_back(TokenTrie::Node{});
  std::vector<Pending> queue{{0, 0, ids.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Pending p = queue[q];
    size_t i = p.begin;
    trie.nodes[p.node].subtree_begin = static_cast<uint32_t>(p.begin);
    trie.nodes[p.node].subtree_end = static_cast<uint32_t>(p.end);
    trie.nodes[p.node].first_token = static_cast<uint32_t>(trie.tokens.size());
    while (i < p.end && bytes(ids[i]).size() == p.depth) trie.tokens.push_back(ids[i++]);  // they sort first
    trie.nodes[p.node].num_tokens = static_cast<uint32_t>(trie.tokens.size()) - trie.nodes[p.node].first_token;
    trie.nodes[p.node].first_child = static_cast<uint32_t>(trie.nodes.size());
    while (i < p.end) {
      const auto byte = static_cast<uint8_t>(bytes(ids[i])[p.depth]);
      size_t j = i;
      while (j < p.end && static_cast<uint8_t>(bytes(ids[j])[p.depth]) == byte) ++j;
      TokenTrie::Node child;
      child.byte = byte;
      trie.nodes.push_back(child);
      queue.push_back({static_cast<uint32_t>(trie.nodes.size() - 1), i, j, p.depth + 1});
      i = j;
    }
    trie.nodes[p.node].num_children = static_cast<uint32_t>(trie.nodes.size()) - trie.nodes[p.node].first_child;
  }
  trie.sorted = std::move(ids);
  return trie;
}

bool is_plain(std::string_view piece) {
  for (unsigned char c : piece)
    if (c < 0x20 || c == '"' || c == '\\' || c == 0x7F) return false;
  return unicode::is_valid_utf8(piece);
}

// The smallest offset from which the piece is plain (piece.size() when only the empty end is).
uint16_t plain_start(const std::string& piece) {
  size_t start = piece.size();
  for (size_t k = piece.size(); k-- > 0;) {
    if ((static_cast<uint8_t>(piece[k]) & 0xC0) == 0x80) continue;  // not a character start
    if (!is_plain(std::string_view(piece).substr(k))) break;
    start = k;
  }
  return static_cast<uint16_t>(std::min<size_t>(start, 65535));
}

}  // namespace

VocabularyTrie::VocabularyTrie(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  pieces_.resize(static_cast<size_t>(n));
  plain_.words.assign((static_cast<size_t>(n) + 63) / 64, 0);
  plain_start_.assign(static_cast<size_t>(n), 0);
  std::vector<int32_t> all, special;
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer.is_end_of_generation(id)) {
      end_of_generation_.push_back(id);
      continue;
    }
    // Control tokens render as nothing (and are never in a mask), except the chat answers' markers
    // (vocab.h: is_output_marker_text), which render as their text.
    std::string& piece = pieces_[static_cast<size_t>(id)];
    piece = tokenizer.token_to_piece(id, false);
    if (piece.empty()) continue;
    max_token_bytes_ = std::max(max_token_bytes_, piece.size());
    plain_start_[static_cast<size_t>(id)] = plain_start(piece);
    all.push_back(id);
    if (is_plain(piece)) {
      plain_.allow(id);
    } else {
      special.push_back(id);
    }
  }
  all_ = build_trie(std::move(all), pieces_);
  special_ = build_trie(std::move(special), pieces_);
}

bool VocabularyTrie::is_end_of_generation(int32_t id) const {
  return std::find(end_of_generation_.begin(), end_of_generation_.end(), id) != end_of_generation_.end();
}

size_t TokenMask::count() const {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

size_t ConstraintTables::StateHash::operator()(const GrammarAutomaton::State& s) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t v : s) h = (h ^ v) * 1099511628211ull;
  return static_cast<size_t>(h);
}

ConstraintTables::ConstraintTables(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabularyTrie> vocabulary,
                                   size_t max_masks)
    : automaton_(std::make_shared<GrammarAutomaton>(std::move(grammar))),
      vocabulary_(std::move(vocabulary)),
      max_masks_(max_masks) {}

void ConstraintTables::walk(const TokenTrie& trie, uint32_t trie_node, size_t depth, TokenMask& mask) {
  const TokenTrie::Node& node = trie.nodes[trie_node];
  const GrammarAutomaton::State& here = depth_states_[depth];
  GrammarAutomaton::State& next = depth_states_[depth + 1];
  for (uint32_t c = node.first_child; c < node.first_child + node.num_children; ++c) {
    const TokenTrie::Node& child = trie.nodes[c];
    if (!automaton_->can_take(here, child.byte)) continue;
    automaton_->advance(here, child.byte, next);
    if (next.empty()) continue;
    if (child.num_children > 0 && next.size() == 1 && next[0] != GrammarAutomaton::kAccepted && node_loops(next[0])) {
      // Inside a free string from here on: the subtree needs no walk (allow_subtree_from_loop).
      allow_subtree_from_loop(trie, c, depth + 1, next, mask);
      continue;
    }
    for (uint32_t t = child.first_token; t < child.first_token + child.num_tokens; ++t) mask.allow(trie.tokens[t]);
    if (child.num_children > 0) walk(trie, c, depth + 1, mask);
  }
}

bool ConstraintTables::node_loops(uint32_t node) {
  if (node >= node_loops_.size()) node_loops_.resize(automaton_->num_nodes() + 64, -1);
  if (node_loops_[node] < 0) node_loops_[node] = loops_on_plain_characters(GrammarAutomaton::State{node}) ? 1 : 0;
  return node_loops_[node] == 1;
}

void ConstraintTables::allow_subtree_from_loop(const TokenTrie& trie, uint32_t c, size_t depth, const GrammarAutomaton::State& state,
                                               TokenMask& mask) {
  // Every plain character leads `state` back to itself, so a token whose rest is plain is allowed
  // as it stands; the others (a quote, an escape, a control byte, a broken character ahead) are
  // run through the automaton one by one.
  const TokenTrie::Node& node = trie.nodes[c];
  for (uint32_t k = node.subtree_begin; k < node.subtree_end; ++k) {
    const int32_t id = trie.sorted[k];
    if (vocabulary_->plain_from(id, depth)) {
      mask.allow(id);
      continue;
    }
    const std::string& bytes = vocabulary_->bytes_of(id);
    probe_a_ = state;
    bool alive = true;
    for (size_t i = depth; i < bytes.size() && alive; ++i) {
      automaton_->advance(probe_a_, static_cast<uint8_t>(bytes[i]), probe_b_);
      std::swap(probe_a_, probe_b_);
      alive = !probe_a_.empty();
    }
    if (alive) mask.allow(id);
  }
}

// Continuation-byte ranges of the valid UTF-8 sequences after each group of lead bytes.
bool ConstraintTables::returns_after(const GrammarAutomaton::State& state, const GrammarAutomaton::State& home, int level,
                                     const uint8_t (*ranges)[2], int n_ranges) {
  if (level == n_ranges) return state == home;
  GrammarAutomaton::State next, last;
  bool have_last = false;
  for (unsigned b = ranges[level][0]; b <= ranges[level][1]; ++b) {
    automaton_->advance(state, static_cast<uint8_t>(b), next);
    if (next.empty()) return false;
    if (have_last && next == last) continue;  // same state as the byte before: already checked
    if (!returns_after(next, home, level + 1, ranges, n_ranges)) return false;
    last = next;
    have_last = true;
  }
  return true;
}

bool ConstraintTables::loops_on_plain_characters(const GrammarAutomaton::State& state) {
  if (state.empty()) return false;
  GrammarAutomaton::State next;
  for (unsigned b = 0x20; b < 0x7F; ++b) {
    if (b == '"' || b == '\\') continue;
    automaton_->advance(state, static_cast<uint8_t>(b), next);
    if (next != state) return false;
  }
  // Every valid multi-byte character, lead byte by lead byte (RFC 3629's table).
  struct Group {
    uint8_t lo, hi;
    int n;
    uint8_t ranges[3][2];
  };
  static constexpr Group kGroups[] = {
      {0xC2, 0xDF, 1, {{0x80, 0xBF}}},
      {0xE0, 0xE0, 2, {{0xA0, 0xBF}, {0x80, 0xBF}}},
      {0xE1, 0xEC, 2, {{0x80, 0xBF}, {0x80, 0xBF}}},
      {0xED, 0xED, 2, {{0x80, 0x9F}, {0x80, 0xBF}}},
      {0xEE, 0xEF, 2, {{0x80, 0xBF}, {0x80, 0xBF}}},
      {0xF0, 0xF0, 3, {{0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}}},
      {0xF1, 0xF3, 3, {{0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}}},
      {0xF4, 0xF4, 3, {{0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}}},
  };
  for (const Group& g : kGroups)
    for (unsigned lead = g.lo; lead <= g.hi; ++lead) {
      automaton_->advance(state, static_cast<uint8_t>(lead), next);
      if (next.empty() || !returns_after(next, state, 0, g.ranges, g.n)) return false;
    }
  return true;
}

const TokenMask& ConstraintTables::mask_for(const GrammarAutomaton::State& state) {
  auto it = masks_.find(state);
  if (it != masks_.end()) return it->second;
  if (masks_.size() >= max_masks_) masks_.clear();
  TokenMask mask;
  const bool plain_loop = loops_on_plain_characters(state);
  if (plain_loop) {
    mask = vocabulary_->plain_tokens();  // each leads back here: all allowed
  } else {
    mask.words.assign((static_cast<size_t>(vocabulary_->n_vocab()) + 63) / 64, 0);
  }
  depth_states_.resize(vocabulary_->max_token_bytes() + 2);  // walk() holds references into it: no growth below
  depth_states_[0] = state;
  walk(plain_loop ? vocabulary_->special() : vocabulary_->all(), 0, 0, mask);
  if (GrammarAutomaton::accepting(state))
    for (int32_t id : vocabulary_->end_of_generation_ids()) mask.allow(id);
  return masks_.emplace(state, std::move(mask)).first->second;
}

TokenConstraint::TokenConstraint(std::shared_ptr<ConstraintTables> tables, std::string trigger)
    : tables_(std::move(tables)), matcher_(tables_->automaton()) {
  ended_mask_.words.assign((static_cast<size_t>(tables_->vocabulary().n_vocab()) + 63) / 64, 0);
  if (!trigger.empty()) {
    // The scanner needs the vocabulary shared; the tables hold it.
    trigger_ = std::make_unique<TriggerScanner>(std::move(trigger), tables_->vocabulary_ptr());
  }
}

const TokenMask& TokenConstraint::free_mask() {
  const int32_t n_vocab = vocabulary().n_vocab();
  free_mask_.words.assign((static_cast<size_t>(n_vocab) + 63) / 64, ~uint64_t{0});
  if (n_vocab % 64) free_mask_.words.back() = (uint64_t{1} << (n_vocab % 64)) - 1;
  free_refused_.clear();
  GrammarMatcher probe(tables_->automaton());
  const size_t keep = std::min(free_text_.size(), trigger_->trigger().size() - 1);
  for (const TriggerScanner::Completion& c : trigger_->completions(free_text_)) {
    const std::string joined = free_text_.substr(free_text_.size() - keep) + vocabulary().bytes_of(c.token);
    if (probe.accept(std::string_view(joined).substr(c.start))) {
      probe.rollback(1);
    } else {
      free_mask_.words[static_cast<size_t>(c.token) >> 6] &= ~(uint64_t{1} << (c.token & 63));
      free_refused_.push_back(c.token);
    }
  }
  return free_mask_;
}

const TokenMask& TokenConstraint::allowed_tokens() {
  if (ended()) return ended_mask_;
  if (trigger_ && !triggered()) return free_mask();
  return tables_->mask_for(matcher_.state());
}

void TokenConstraint::mask_logits(float* logits, int64_t n_vocab) {
  if (trigger_ && !triggered() && !ended()) {  // free text: only the few refused tokens
    const TokenMask& free = free_mask();
    const int64_t n = std::min<int64_t>(n_vocab, vocabulary().n_vocab());
    for (const int32_t id : free_refused_)
      if (id < n) logits[id] = -std::numeric_limits<float>::infinity();
    for (int64_t id = n; id < n_vocab; ++id) logits[id] = -std::numeric_limits<float>::infinity();
    (void)free;
    return;
  }
  const TokenMask& mask = allowed_tokens();
  const int64_t n = std::min<int64_t>(n_vocab, vocabulary().n_vocab());
  for (int64_t id = 0; id < n; ++id)
    if (!mask.allows(static_cast<int32_t>(id))) logits[id] = -std::numeric_limits<float>::infinity();
  // Rows wider than the vocabulary (padded output matrices): those ids have no bytes.
  for (int64_t id = n; id < n_vocab; ++id) logits[id] = -std::numeric_limits<float>::infinity();
}

bool TokenConstraint::accept_token(int32_t id) {
  if (ended() || id < 0 || id >= vocabulary().n_vocab()) return false;
  if (vocabulary().is_end_of_generation(id)) {
    if (!complete()) return false;
    if (triggered() || !trigger_) matcher_.accept("");
    ended_at_.push_back(accepted_.size());
    accepted_.push_back(id);
    return true;
  }
  const std::string& bytes = vocabulary().bytes_of(id);
  if (trigger_ && !triggered()) {
    // Free text: a token without bytes (a control token) is free text too.
    const size_t keep = std::min(free_text_.size(), trigger_->trigger().size() - 1);
    const std::string joined = free_text_.substr(free_text_.size() - keep) + bytes;
    const size_t at = trigger_->find(joined);
    if (at == std::string::npos) {
      free_text_ += bytes;
      free_sizes_.push_back(bytes.size());
      accepted_.push_back(id);
      return true;
    }
    if (!matcher_.accept(std::string_view(joined).substr(at))) return false;
    triggered_at_ = accepted_.size();
    accepted_.push_back(id);
    return true;
  }
  if (bytes.empty() || !matcher_.accept(bytes)) return false;
  accepted_.push_back(id);
  return true;
}

void TokenConstraint::rollback(size_t n) {
  if (n > accepted_.size()) throw Error("internal: constraint rollback past the start");
  const size_t new_size = accepted_.size() - n;
  if (!ended_at_.empty() && ended_at_.back() >= new_size) {  // the end-of-generation token
    if (!trigger_ || triggered()) matcher_.rollback(1);
    ended_at_.clear();
    accepted_.pop_back();
    --n;
  }
  if (trigger_) {
    // Tokens before triggered_at_ are free text (no matcher call); from it on, one matcher call each.
    const size_t first_fed = triggered() ? triggered_at_ : accepted_.size();
    matcher_.rollback(accepted_.size() - std::max(first_fed, new_size));
    if (triggered() && new_size <= triggered_at_) triggered_at_ = kNotTriggered;
    while (free_sizes_.size() > new_size) {
      free_text_.resize(free_text_.size() - free_sizes_.back());
      free_sizes_.pop_back();
    }
  } else {
    matcher_.rollback(n);
  }
  accepted_.resize(new_size);
}

}  // namespace nucleus
