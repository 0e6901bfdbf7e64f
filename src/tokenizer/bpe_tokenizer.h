// Ranked-merge BPE, as llama.cpp's llm_tokenizer_bpe runs it: byte-level (tokenizer.ggml.model =
// "gpt2") or SentencePiece-style (model "gemma4", PreTokenizerTraits::sentencepiece_alphabet).
//
// Each text fragment is cut into words by the pre-tokenizer; each word starts as single symbols —
// its bytes as tokens of the byte-level alphabet, or (SentencePiece-style, after spaces became "▁")
// its UTF-8 characters — then the adjacent pair with the lowest merge rank is merged (ties:
// leftmost first) until no pair has a merge. Merges never cross words. A final symbol that is not
// a token becomes its <0xXX> byte tokens (SentencePiece-style) or is dropped (byte-level: real
// vocabularies hold the whole alphabet). With ignore_merges (Llama 3), a word that is itself a
// vocabulary token is emitted whole.
//
// Merges are kept by token ids: (left id, right id) → (rank, merged id). Loading checks that both
// sides and the result of every merge are tokens, so merging never leaves the vocabulary.
#pragma once
#include <array>
#include <unordered_map>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {

class BpeTokenizer final : public Tokenizer {
 public:
  // `merges`: tokenizer.ggml.merges, "left right" per entry, highest priority first. Throws Error
  // naming the file for a malformed entry or one that names a token not in the vocabulary.
  BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges, PreTokenizer pre_tokenizer);

  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  std::string model_name() const override {
    return sentencepiece() ? pre_tokenizer_.name() : "gpt2/" + pre_tokenizer_.name();
  }

  size_t n_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;       // position in tokenizer.ggml.merges: lower merges first
    int32_t merged_id;  // the token the pair becomes
  };
  struct Workspace;  // per-encode scratch buffers

  static uint64_t pair_key(int32_t left_id, int32_t right_id) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left_id)) << 32) | static_cast<uint32_t>(right_id);
  }
  bool sentencepiece() const { return pre_tokenizer_.traits().sentencepiece_alphabet; }
  void encode_word(std::string_view word, Workspace& workspace, std::vector<int32_t>& output) const;

  PreTokenizer pre_tokenizer_;
  std::unordered_map<uint64_t, Merge> merges_;   // pair_key(left, right) → merge
  std::array<int32_t, 256> byte_token_ids_{};    // token of each byte's alphabet character, -1 if missing
  std::array<int32_t, 256> byte_fallback_ids_{};  // SentencePiece-style: each byte's <0xXX> token, -1 if missing
  std::array<std::string, 256> byte_characters_;  // UTF-8 of each byte's alphabet character
  std::vector<std::string> pieces_;              // [n_vocab] token_to_piece(id, false)
};

}  // namespace nucleus
