#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <queue>
#include <string>

#include "tokenizer/special_tokens.h"
#include "tokenizer/unicode.h"

namespace nucleus {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 '▁', SentencePiece's visible space

// A run of bytes of the fragment that is currently one token candidate; symbols form a linked list
// in text order, and a merged-away symbol has length 0.
struct Symbol {
  size_t offset;
  size_t length;
  int prev;
  int next;
};

// A candidate merge of two adjacent symbols. `length` is their combined length when the candidate
// was made: if either symbol changed since, the candidate is stale and skipped.
struct Bigram {
  int left;
  int right;
  float score;
  size_t length;
};

// Highest score first; among equal scores the leftmost pair, so results do not depend on heap order.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

void replace_spaces(std::string_view text, std::string& out) {
  for (char c : text) {
    if (c == ' ') {
      out += kSpaceMarker;
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)) {
  // Byte fallback: the token each byte becomes when its character is not in the vocabulary.
  static const char kHexDigits[] = "0123456789ABCDEF";
  for (int byte = 0; byte < 256; ++byte) {
    const std::string byte_token = {'<', '0', 'x', kHexDigits[byte >> 4], kHexDigits[byte & 15], '>'};
    int32_t id = vocab_.find(byte_token);
    if (id < 0) id = vocab_.find(std::string(1, static_cast<char>(byte)));
    if (id < 0) id = vocab_.unknown_id;  // no byte fallback in this vocabulary; -1 drops the byte
    byte_token_ids_[byte] = id;
  }

  // Every pair of characters that appear side by side in some token (see encode_fragment).
  for (const std::string& text : vocab_.texts) {
    size_t pos = 0;
    uint32_t previous = kNotACharacter, codepoint = 0;
    while (pos < text.size()) {
      unicode::next_codepoint(text, pos, codepoint);  // texts are validated UTF-8
      if (previous != kNotACharacter) adjacent_characters_.insert(pair_key(previous, codepoint));
      previous = codepoint;
    }
  }

  // What each token prints as: '▁' back to ' ', <0xXX> to its byte.
  pieces_.resize(vocab_.n_vocab());
  for (int32_t id = 0; id < vocab_.n_vocab(); ++id) {
    const std::string& text = vocab_.texts[id];
    if (vocab_.has_attribute(id, kAttrControl) && is_output_marker_text(text)) {  // vocab.h: rendered as text
      pieces_[id] = text;
      continue;
    }
    if (vocab_.has_attribute(id, kAttrControl | kAttrUnknown)) continue;  // rendered only on request
    if (vocab_.has_attribute(id, kAttrUserDefined)) {
      pieces_[id] = text;
    } else if (vocab_.has_attribute(id, kAttrNormal)) {
      std::string& piece = pieces_[id];
      for (size_t i = 0; i < text.size();) {
        if (text.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
          piece.push_back(' ');
          i += kSpaceMarker.size();
        } else {
          piece.push_back(text[i++]);
        }
      }
    } else if (vocab_.has_attribute(id, kAttrByte)) {
      pieces_[id] = std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
    }
    // UNUSED and UNDEFINED tokens render as nothing.
  }
}

// Merging is local: two adjacent characters can only end up in one symbol if some token contains
// them side by side. Where no token does, no merge ever crosses, so the fragment is cut there and
// each piece is merged on its own with the same result as merging the whole fragment at once (and
// with small heaps instead of one the size of the input).
void SpmTokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& output) const {
  if (text.empty()) return;
  std::vector<Symbol> symbols;
  std::vector<uint32_t> characters;  // code point of each symbol; kNotACharacter for invalid bytes
  symbols.reserve(text.size());
  characters.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t length = std::min(unicode::utf8_sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
    size_t end = offset;
    uint32_t codepoint = 0;
    const bool valid = unicode::next_codepoint(text.substr(0, offset + length), end, codepoint) && end == offset + length;
    characters.push_back(valid ? codepoint : kNotACharacter);
    symbols.push_back({offset, length, -1, -1});
    offset += length;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add_bigram = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t length = symbols[left].length + symbols[right].length;
    const int32_t id = vocab_.find(text.substr(symbols[left].offset, length));
    if (id < 0) return;
    queue.push({left, right, vocab_.scores[id], length});
  };

  const int n_symbols = static_cast<int>(symbols.size());
  for (int chunk_begin = 0; chunk_begin < n_symbols;) {
    int chunk_end = chunk_begin + 1;
    while (chunk_end < n_symbols && can_join(characters[chunk_end - 1], characters[chunk_end])) ++chunk_end;
    for (int i = chunk_begin; i < chunk_end; ++i) {
      symbols[i].prev = i > chunk_begin ? i - 1 : -1;
      symbols[i].next = i + 1 < chunk_end ? i + 1 : -1;
    }
    for (int i = chunk_begin + 1; i < chunk_end; ++i) try_add_bigram(i - 1, i);

    while (!queue.empty()) {
      const Bigram bigram = queue.top();
      queue.pop();
      Symbol& left = symbols[bigram.left];
      Symbol& right = symbols[bigram.right];
      if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) continue;  // stale
      left.length += right.length;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = bigram.left;
      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }

    for (int i = chunk_begin; i != -1; i = symbols[i].next) {
      const std::string_view piece = text.substr(symbols[i].offset, symbols[i].length);
      const int32_t id = vocab_.find(piece);
      if (id >= 0) {
        output.push_back(id);
        continue;
      }
      // Only unmerged single characters can miss the vocabulary (every merge result is a token).
      for (char c : piece) {
        const int32_t byte_id = byte_token_ids_[static_cast<uint8_t>(c)];
        if (byte_id >= 0) output.push_back(byte_id);
      }
    }
    chunk_begin = chunk_end;
  }
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> output;
  if (add_special && vocab_.add_bos) output.push_back(vocab_.bos_id);

  // The space prefix goes on text that starts the input or follows a special token (SentencePiece
  // "legacy" behaviour, which llama.cpp and the reference ids follow).
  bool previous_is_special = true;
  std::string escaped;
  for (const TextFragment& fragment : split_special_tokens(vocab_, text, parse_special)) {
    if (fragment.is_token()) {
      output.push_back(fragment.token_id);
      previous_is_special = true;
      continue;
    }
    escaped.clear();
    if (vocab_.add_space_prefix && previous_is_special) escaped += kSpaceMarker;
    replace_spaces(text.substr(fragment.offset, fragment.length), escaped);
    encode_fragment(escaped, output);
    previous_is_special = false;
  }

  if (add_special && vocab_.add_eos) output.push_back(vocab_.eos_id);
  return output;
}

std::string SpmTokenizer::token_to_piece(int32_t id, bool render_special) const {
  check_id(id);
  if (render_special && vocab_.has_attribute(id, kAttrControl | kAttrUnknown)) return vocab_.texts[id];
  return pieces_[id];
}

}  // namespace nucleus
