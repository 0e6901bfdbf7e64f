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
  trie.plain_from_bits.assign(ids.size(), 0);
  for (size_t k = 0; k < ids.size(); ++k) {
    const std::string& b = bytes(ids[k]);
    const size_t start = plain_start(b);
    for (size_t d = start; d <= b.size() && d < 64; ++d)
      if (d == b.size() || (static_cast<uint8_t>(b[d]) & 0xC0) != 0x80) trie.plain_from_bits[k] |= uint64_t{1} << d;
  }
  trie.sorted = std::move(ids);
  return trie;
}

}  // namespace

VocabularyTrie::VocabularyTrie(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  pieces_.resize(static_cast<size_t>(n));
  plain_.words.assign((static_cast<size_t>(n) + 63) / 64, 0);
  plain_start_.assign(static_cast<size_t>(n), 0);
  plain_by_first_byte_.resize(256);
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
      TokenMask& first = plain_by_first_byte_[static_cast<uint8_t>(piece[0])];
      if (first.words.empty()) first.words.assign(plain_.words.size(), 0);
      first.allow(id);
    } else {
      special.push_back(id);
    }
  }
  plain_up_to_.assign(kChainChars + 1, TokenMask{std::vector<uint64_t>(plain_.words.size(), 0)});
  for (int32_t id = 0; id < n; ++id) {
    if (!plain_.allows(id)) continue;
    const std::string& piece = pieces_[static_cast<size_t>(id)];
    size_t chars = 0, offset = 0;
    for (size_t i = 0; i < piece.size(); ++i) {
      if ((static_cast<uint8_t>(piece[i]) & 0xC0) == 0x80) continue;
      if (chars == kChainChars) offset = i;
      ++chars;
    }
    if (chars > kChainChars) {
      long_plain_.emplace_back(id, static_cast<uint32_t>(offset));
    } else {
      for (size_t k = chars; k <= kChainChars; ++k) plain_up_to_[k].allow(id);
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
  // Word by word: a word of 64 allowed tokens (most of them inside a string) is skipped at once.
  for (int64_t base = 0; base < n; base += 64) {
    uint64_t refused = ~mask.words[static_cast<size_t>(base >> 6)];
    if (n - base < 64) refused &= (uint64_t{1} << (n - base)) - 1;
    for (; refused; refused &= refused - 1) logits[base + std::countr_zero(refused)] = -std::numeric_limits<float>::infinity();
  }
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
