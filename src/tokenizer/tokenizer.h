// Text ↔ token ids, as exactly as llama.cpp does it, for the two tokenizer families in GGUF files:
//
//   tokenizer.ggml.model = "llama"  SentencePiece-style BPE (Llama 1/2, Mistral v1, Phi-3, TinyLlama):
//                                   score-driven merges, '▁' for space, <0xXX> byte fallback.
//   tokenizer.ggml.model = "gpt2"   byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM, DeepSeek, ...):
//                                   a regex pre-tokenizer chosen by tokenizer.ggml.pre, then ranked
//                                   merges over the byte-level alphabet.
//
// encode() runs in three stages: special tokens are cut out of the text (special_tokens.h), each
// remaining fragment is tokenized by the model (spm_tokenizer.h / bpe_tokenizer.h), and BOS/EOS are
// added. Decoding is the concatenation of per-token pieces.
//
// A Tokenizer is immutable after from_gguf(): every method is const and safe to call from several
// threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace nucleus {

class GgufFile;

struct TokenizerOptions {
  // --tokenizer-pre NAME: the byte-level BPE pre-tokenizer to use instead of tokenizer.ggml.pre
  // (SentencePiece vocabularies have none and ignore it).
  std::string pre_override;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Reads the tokenizer.ggml.* metadata. Throws Error naming the file and the problem for malformed
  // metadata (empty vocabulary, missing token types where required, merges naming unknown tokens,
  // invalid UTF-8 tokens, an unknown tokenizer.ggml.model, an unknown tokenizer.ggml.pre without an
  // override).
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file, const TokenizerOptions& options = {});

  // add_special: put BOS/EOS around the result as add_bos_token/add_eos_token say.
  // parse_special: also recognize the text of CONTROL tokens ("<|eot_id|>", "<s>"). USER_DEFINED
  // tokens are recognized either way, as in llama.cpp and Hugging Face tokenizers (they are ordinary
  // added words, e.g. Qwen2's "[PAD151646]").
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const = 0;

  // The bytes one token stands for in output text: SPM '▁' → ' ' and <0xXX> → that byte; BPE the
  // byte-level alphabet reversed; USER_DEFINED tokens their text. CONTROL and UNKNOWN tokens give ""
  // unless render_special (then their text). A piece can be part of a UTF-8 character.
  // Throws Error for an id outside [0, n_vocab()).
  virtual std::string token_to_piece(int32_t id, bool render_special = false) const = 0;

  // The concatenation of the pieces. strip_space_prefix undoes the space encode() puts in front of
  // SPM text (add_space_prefix): one leading space is removed from the first token, or from the one
  // after a leading BOS, so decode(encode(s, add_special, false), false, true) == s. It is a no-op
  // for tokenizers that add no prefix.
  std::string decode(const std::vector<int32_t>& ids, bool render_special = false,
                     bool strip_space_prefix = false) const;

  int32_t n_vocab() const { return vocab_.n_vocab(); }
  int32_t bos_id() const { return vocab_.bos_id; }  // -1 when the vocabulary has none
  int32_t eos_id() const { return vocab_.eos_id; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  bool add_space_prefix() const { return vocab_.add_space_prefix; }
  // EOS plus every end-of-turn token (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, ...).
  bool is_end_of_generation(int32_t id) const;
  const std::vector<int32_t>& end_of_generation_ids() const { return vocab_.end_of_generation_ids; }
  bool is_control(int32_t id) const { return vocab_.contains(id) && vocab_.has_attribute(id, kAttrControl); }
  const std::string& token_text(int32_t id) const;  // the raw vocabulary string; throws Error when out of range
  int32_t find_token(std::string_view text) const { return vocab_.find(text); }  // -1 when absent
  // "llama" for SentencePiece; "gpt2/<pre-tokenizer>" for byte-level BPE, e.g. "gpt2/llama-bpe".
  virtual std::string model_name() const = 0;
  const Vocab& vocab() const { return vocab_; }

 protected:
  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  void check_id(int32_t id) const;  // throws Error unless 0 <= id < n_vocab

  Vocab vocab_;
};

// Streaming detokenization: feed generated ids one at a time; text is released only up to the last
// complete UTF-8 character, so a stream never shows a broken character (bytes that can never become
// valid UTF-8 are released as they are). The concatenation of every push() and the final flush()
// equals tokenizer.decode(all ids, render_special). Holds a reference: the tokenizer must outlive it.
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool render_special = false)
      : tokenizer_(tokenizer), render_special_(render_special) {}
  std::string push(int32_t id);
  std::string flush();  // whatever is held back (an unfinished character at the end of the stream)

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string pending_;  // bytes of an unfinished character, at most 3
};

// llama.cpp's tokenizer test format: the input holds cases, each followed by a line
// "__ggml_vocab_test__". Returns, per case, one line with each id preceded by a space (the layout of
// the .out files), encoding with add_special = false and parse_special = false.
std::string format_token_cases(const Tokenizer& tokenizer, const std::string& inp_file_contents);
// The cases of such a file, in order (exposed for tests that check decoding).
std::vector<std::string> split_token_cases(const std::string& inp_file_contents);

}  // namespace nucleus
