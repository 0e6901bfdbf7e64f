#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/unicode.h"

namespace nucleus {

namespace {

// One token of a word being merged; the word's symbols form a linked list in text order.
struct Symbol {
  int32_t id;  // -1: a byte (or character) that is not in the vocabulary: it never merges
  int prev;
  int next;
  bool merged_away;
  int begin, end;  // its bytes in the word
};

constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";  // U+2581 '▁'

std::string byte_token_text(int byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string{'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

// A possible merge of two adjacent symbols, valid while both still hold the ids it was made from.
struct Candidate {
  int32_t rank;
  int left;
  int right;
  int32_t left_id;
  int32_t right_id;
  int32_t merged_id;
};

// Heap order: lowest rank on top; among equal ranks the leftmost pair.
struct CandidateAfter {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

struct BpeTokenizer::Workspace {
  std::vector<std::string_view> words;
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string mapped_word;  // the word in the byte-level alphabet (for ignore_merges)
  std::string escaped;      // SentencePiece-style: the fragment with spaces as ▁
};

BpeTokenizer::BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges, PreTokenizer pre_tokenizer)
    : Tokenizer(std::move(vocab)), pre_tokenizer_(std::move(pre_tokenizer)) {
  for (int byte = 0; byte < 256; ++byte) {
    unicode::append_utf8(unicode::byte_to_codepoint(static_cast<uint8_t>(byte)), byte_characters_[byte]);
    byte_token_ids_[byte] = vocab_.find(byte_characters_[byte]);
    byte_fallback_ids_[byte] = sentencepiece() ? vocab_.find(byte_token_text(byte)) : -1;
  }

  const std::string where = vocab_.source + ": tokenizer.ggml.merges";
  merges_.reserve(merges.size());
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& entry = merges[rank];
    auto fail = [&](const std::string& problem) {
      throw Error(where + "[" + std::to_string(rank) + "] '" + entry + "' " + problem);
    };
    // The separator is the first space after the first character (a side is never empty).
    const size_t space = entry.find(' ', 1);
    if (space == std::string::npos) fail("is not two tokens separated by a space");
    const std::string_view left(entry.data(), space);
    const std::string_view right(entry.data() + space + 1, entry.size() - space - 1);
    const int32_t left_id = vocab_.find(left);
    if (left_id < 0) fail("names unknown token '" + std::string(left) + "'");
    const int32_t right_id = vocab_.find(right);
    if (right_id < 0) fail("names unknown token '" + std::string(right) + "'");
    merged.assign(left);
    merged.append(right);
    const int32_t merged_id = vocab_.find(merged);
    if (merged_id < 0) fail("makes '" + merged + "', which is not in the vocabulary");
    // A repeated pair keeps its first (highest-priority) rank.
    merges_.emplace(pair_key(left_id, right_id), Merge{static_cast<int32_t>(rank), merged_id});
  }

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
    } else if (vocab_.has_attribute(id, kAttrNormal) && sentencepiece()) {
      std::string& piece = pieces_[id];
      for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSentencePieceSpace.size(), kSentencePieceSpace) == 0) {
          piece.push_back(' ');
          pos += kSentencePieceSpace.size();
        } else {
          piece.push_back(text[pos++]);
        }
      }
    } else if (vocab_.has_attribute(id, kAttrNormal)) {
      // Back from the byte-level alphabet to bytes. A character outside the alphabet (a vocabulary
      // that stores some text as plain UTF-8) is kept as it is.
      std::string& piece = pieces_[id];
      size_t pos = 0;
      uint32_t codepoint = 0;
      while (pos < text.size()) {
        const size_t start = pos;
        unicode::next_codepoint(text, pos, codepoint);  // texts are validated UTF-8
        const int byte = unicode::codepoint_to_byte(codepoint);
        if (byte >= 0) {
          piece.push_back(static_cast<char>(byte));
        } else {
          piece.append(text, start, pos - start);
        }
      }
    } else if (vocab_.has_attribute(id, kAttrByte) && text.size() == 6 && text.compare(0, 3, "<0x") == 0) {
      pieces_[id] = std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
    }
    // UNUSED and UNDEFINED tokens render as nothing.
  }
}

void BpeTokenizer::encode_word(std::string_view word, Workspace& workspace, std::vector<int32_t>& output) const {
  if (word.empty()) return;
  const bool by_characters = sentencepiece();
  if (by_characters && word.find_first_not_of('\n') == std::string_view::npos) {
    // A run of newlines that is a token stays whole (llama.cpp's Gemma 4 fix, its PR 21343).
    if (const int32_t id = vocab_.find(word); id >= 0) {
      output.push_back(id);
      return;
    }
  }
  if (!by_characters && word.size() == 1) {
    const int32_t id = byte_token_ids_[static_cast<uint8_t>(word[0])];
    if (id >= 0) output.push_back(id);
    return;
  }
  if (pre_tokenizer_.traits().ignore_merges) {
    std::string& mapped = workspace.mapped_word;
    mapped.clear();
    for (char c : word) mapped += byte_characters_[static_cast<uint8_t>(c)];
    if (const int32_t id = vocab_.find(mapped); id >= 0) {
      output.push_back(id);
      return;
    }
  }

  std::vector<Symbol>& symbols = workspace.symbols;
  std::vector<Candidate>& heap = workspace.heap;
  symbols.clear();
  heap.clear();
  for (size_t pos = 0; pos < word.size();) {
    const size_t length = by_characters ? std::min(word.size() - pos, unicode::utf8_sequence_length(static_cast<uint8_t>(word[pos]))) : 1;
    const int32_t id = by_characters ? vocab_.find(word.substr(pos, length)) : byte_token_ids_[static_cast<uint8_t>(word[pos])];
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, false, static_cast<int>(pos), static_cast<int>(pos + length)});
    pos += length;
  }
  const int n_symbols = static_cast<int>(symbols.size());
  symbols.back().next = -1;
  auto add_candidate = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t left_id = symbols[left].id;
    const int32_t right_id = symbols[right].id;
    if (left_id < 0 || right_id < 0) return;
    const auto it = merges_.find(pair_key(left_id, right_id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, right, left_id, right_id, it->second.merged_id});
    std::push_heap(heap.begin(), heap.end(), CandidateAfter{});
  };
  for (int i = 1; i < n_symbols; ++i) add_candidate(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), CandidateAfter{});
    const Candidate candidate = heap.back();
    heap.pop_back();
    Symbol& left = symbols[candidate.left];
    Symbol& right = symbols[candidate.right];
    // Stale: one side was merged into something else since the candidate was made.
    if (left.merged_away || right.merged_away || left.next != candidate.right || left.id != candidate.left_id ||
        right.id != candidate.right_id) {
      continue;
    }
    left.id = candidate.merged_id;
    left.end = right.end;
    left.next = right.next;
    right.merged_away = true;
    if (right.next >= 0) symbols[right.next].prev = candidate.left;
    add_candidate(left.prev, candidate.left);
    add_candidate(candidate.left, left.next);
  }

  for (int i = 0; i != -1; i = symbols[i].next) {
    const Symbol& symbol = symbols[i];
    if (symbol.id >= 0) {
      output.push_back(symbol.id);
      continue;
    }
    // Not a token: its <0xXX> byte tokens (SentencePiece-style); a byte-level alphabet character
    // missing from the vocabulary is dropped, as llama.cpp does (real vocabularies have all 256).
    for (int b = symbol.begin; b < symbol.end; ++b)
      if (const int32_t id = byte_fallback_ids_[static_cast<uint8_t>(word[b])]; id >= 0) output.push_back(id);
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> output;
  output.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos) output.push_back(vocab_.bos_id);

  Workspace workspace;
  for (const TextFragment& fragment : split_special_tokens(vocab_, text, parse_special)) {
    if (fragment.is_token()) {
      output.push_back(fragment.token_id);
      continue;
    }
    workspace.words.clear();
    std::string_view fragment_text = text.substr(fragment.offset, fragment.length);
    if (sentencepiece()) {
      workspace.escaped.clear();
      for (char c : fragment_text) {
        if (c == ' ') workspace.escaped += kSentencePieceSpace;
        else workspace.escaped += c;
      }
      fragment_text = workspace.escaped;
    }
    pre_tokenizer_.split(fragment_text, workspace.words);
    for (std::string_view word : workspace.words) encode_word(word, workspace, output);
  }

  if (add_special && vocab_.add_eos) output.push_back(vocab_.eos_id);
  return output;
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
  check_id(id);
  if (render_special && vocab_.has_attribute(id, kAttrControl | kAttrUnknown)) return vocab_.texts[id];
  return pieces_[id];
}

}  // namespace nucleus
