// SentencePiece-style BPE (tokenizer.ggml.model = "llama"), as llama.cpp's llm_tokenizer_spm runs it.
//
// A text fragment gets a leading space when it starts the input or follows a special token
// (add_space_prefix), every ' ' becomes '▁' (U+2581), and the text is cut into UTF-8 characters.
// Then, repeatedly, the adjacent pair whose concatenation is the highest-scoring vocabulary token is
// merged (ties: leftmost first). A final symbol that is not a token is emitted as its bytes
// (<0xXX> tokens).
#pragma once
#include <array>
#include <unordered_set>

#include "tokenizer/tokenizer.h"

namespace nucleus {

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  std::string model_name() const override { return "llama"; }

 private:
  static constexpr uint32_t kNotACharacter = 0xFFFFFFFF;  // an invalid byte: part of no token
  static uint64_t pair_key(uint32_t left, uint32_t right) { return (static_cast<uint64_t>(left) << 32) | right; }
  // Whether some token has `left` immediately followed by `right` (so a merge could join them).
  bool can_join(uint32_t left, uint32_t right) const {
    return left != kNotACharacter && right != kNotACharacter && adjacent_characters_.count(pair_key(left, right)) != 0;
  }
  // Appends the tokens of one escaped fragment (spaces already '▁') to `output`.
  void encode_fragment(std::string_view escaped_text, std::vector<int32_t>& output) const;

  std::unordered_set<uint64_t> adjacent_characters_;  // pair_key of every adjacent character pair in any token

  std::array<int32_t, 256> byte_token_ids_{};  // token for each byte value: <0xXX>, else the 1-char token, else UNK
  std::vector<std::string> pieces_;            // [n_vocab] token_to_piece(id, false)
};

}  // namespace nucleus
