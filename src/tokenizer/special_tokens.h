// First stage of encode(): cut the text of special tokens out of the input, so the model tokenizer
// only ever sees ordinary text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace nucleus {

// A piece of the input: either raw text [offset, offset + length) still to be tokenized, or one
// special token found in the text (token_id >= 0).
struct TextFragment {
  int32_t token_id = -1;
  size_t offset = 0;
  size_t length = 0;
  bool is_token() const { return token_id >= 0; }
};

// Splits `text` around occurrences of vocab.special_token_ids, llama.cpp's way: tokens are taken
// longest first, each one everywhere in the text that is still raw, before the next token is tried.
// USER_DEFINED tokens are always matched; CONTROL and UNKNOWN ones only with parse_special.
// LSTRIP/RSTRIP tokens swallow the whitespace on that side. Empty text gives no fragments.
std::vector<TextFragment> split_special_tokens(const Vocab& vocab, std::string_view text, bool parse_special);

}  // namespace nucleus
