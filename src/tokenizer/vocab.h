// The vocabulary a tokenizer works with, read from a GGUF file's tokenizer.ggml.* metadata:
// token strings, scores, types/attributes, special ids and the add-BOS/EOS rules.
//
// Loading validates everything a tokenizer later relies on (so encode/decode never meet a malformed
// vocabulary) and applies llama.cpp's conventions where the metadata is silent: default special ids
// per tokenizer model, end-of-generation tokens recognized by their text, and a few per-model token
// attributes.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nucleus {

class GgufFile;

// Values of tokenizer.ggml.token_type (SentencePiece's piece types).
enum class TokenType : int32_t {
  UNDEFINED = 0,
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5,
  BYTE = 6,
};

// Per-token attribute bits. A token has exactly one of the type bits from its token_type, except
// that tokens recognized as end-of-generation by their text also get CONTROL (llama.cpp does the
// same, so e.g. a user-defined "</s>" is no longer matched in plain text and renders as "").
// LSTRIP/RSTRIP: when matched in text, whitespace to the left/right of the token is dropped.
enum TokenAttribute : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 6,
  kAttrRstrip = 1u << 7,
};

// Control tokens that carry the structure of a chat answer — tool-call and reasoning markers such as
// Mistral's [TOOL_CALLS] and [ARGS], Llama 3's <|python_tag|>, <tool_call>, <think> — render as their
// text like ordinary tokens (token_to_piece without render_special), so an answer's text keeps them
// for the output parsers and a grammar can ask for them; other control tokens render as nothing.
bool is_output_marker_text(std::string_view text);

enum class VocabType {
  SENTENCE_PIECE,  // tokenizer.ggml.model = "llama": score-driven merges, ▁ for space, <0xXX> bytes
  BYTE_LEVEL_BPE,  // tokenizer.ggml.model = "gpt2": ranked merges over the byte-level alphabet
  SENTENCE_PIECE_BPE,  // tokenizer.ggml.model = "gemma4": ranked merges over UTF-8 characters, ▁ for space, <0xXX> bytes
};

// Hash that lets an std::string-keyed map be searched with a string_view (no temporary string).
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>>;

// What the tokenizer model implies when the file does not say.
struct VocabDefaults {
  VocabType type = VocabType::SENTENCE_PIECE;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unknown_id = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  bool requires_token_types = false;  // SPM needs them to find byte and control tokens
};

struct Vocab {
  std::string source;  // the GGUF file's name, for error messages
  VocabType type = VocabType::SENTENCE_PIECE;

  std::vector<std::string> texts;    // [n_vocab] raw token strings (valid UTF-8, unique)
  std::vector<float> scores;         // [n_vocab] SPM merge priority: higher merges first
  std::vector<uint32_t> attributes;  // [n_vocab] TokenAttribute bits
  TokenIdMap ids;                    // text → id, for every token whatever its type

  int32_t bos_id = -1;  // -1: the vocabulary has none
  int32_t eos_id = -1;
  int32_t unknown_id = -1;
  bool add_bos = false;           // encode(add_special=true) starts with BOS
  bool add_eos = false;           // encode(add_special=true) ends with EOS
  bool add_space_prefix = false;  // SPM: a space is put before text that starts a sequence or follows a special token

  std::vector<int32_t> end_of_generation_ids;  // sorted: EOS, end-of-turn and similar tokens
  // Tokens matched in input text before tokenization (CONTROL, USER_DEFINED, UNKNOWN), longest text
  // first so that a token containing another one wins.
  std::vector<int32_t> special_token_ids;

  int32_t n_vocab() const { return static_cast<int32_t>(texts.size()); }
  bool contains(int32_t id) const { return id >= 0 && id < n_vocab(); }
  bool has_attribute(int32_t id, uint32_t attribute) const { return (attributes[id] & attribute) != 0; }
  int32_t find(std::string_view text) const {
    auto it = ids.find(text);
    return it == ids.end() ? -1 : it->second;
  }
};

// Reads tokenizer.ggml.{tokens,scores,token_type,*_token_id,add_*} from `file`; throws Error naming
// the file and the problem for an empty or malformed vocabulary.
Vocab load_vocab(const GgufFile& file, const VocabDefaults& defaults);

}  // namespace nucleus
