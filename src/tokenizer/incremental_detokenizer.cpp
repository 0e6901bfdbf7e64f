#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace nucleus {

std::string IncrementalDetokenizer::push(int32_t id) {
  pending_ += tokenizer_.token_to_piece(id, render_special_);
  const size_t complete = unicode::complete_utf8_prefix_length(pending_);
  std::string released = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return released;
}

std::string IncrementalDetokenizer::flush() {
  std::string released;
  released.swap(pending_);
  return released;
}

}  // namespace nucleus
