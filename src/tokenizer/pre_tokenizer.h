// The byte-level BPE pre-tokenizer: splits text into words before merging, with the regular
// expressions of the model family named by tokenizer.ggml.pre. BPE never merges across words.
//
// A family is a list of patterns applied in turn: the first cuts the text into pieces (matches and
// the gaps between them), the second cuts each of those pieces again on its own, and so on
// (llama.cpp's unicode_regex_split).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/split_pattern.h"

namespace nucleus {

// What a tokenizer.ggml.pre name implies besides its patterns (as in llama.cpp's vocabulary loader).
struct PreTokenizerTraits {
  bool ignore_merges = false;  // a word that is itself a token is emitted whole, without merging
  bool add_bos = false;        // default for add_bos_token when the file does not say
  // SentencePiece-style BPE (tokenizer.ggml.model "gemma4"): spaces become "▁" before splitting,
  // words start as UTF-8 characters instead of the byte-level alphabet, a piece that is not a
  // token falls back to its <0xXX> byte tokens, and a word of newlines that is a token stays whole.
  bool sentencepiece_alphabet = false;
};

class PreTokenizer {
 public:
  // Throws Error naming `name` and listing the known names when it is not a known family.
  explicit PreTokenizer(const std::string& name);

  const std::string& name() const { return name_; }
  const PreTokenizerTraits& traits() const { return traits_; }

  // Appends the words of `text` (views into it, in order, together covering all of it) to `words`.
  void split(std::string_view text, std::vector<std::string_view>& words) const;

  static std::vector<std::string> known_names();

 private:
  std::string name_;
  PreTokenizerTraits traits_;
  std::vector<SplitPattern> patterns_;
};

}  // namespace nucleus
