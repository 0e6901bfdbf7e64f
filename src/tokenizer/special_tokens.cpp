#include "tokenizer/special_tokens.h"

namespace nucleus {

namespace {

// The C locale's isspace, which is what the strip rules of Hugging Face / llama.cpp use.
bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Splits one raw fragment around every occurrence of `token` and appends the pieces to `out`.
// Returns false (appending nothing) when the token does not occur.
bool split_fragment(const Vocab& vocab, std::string_view text, const TextFragment& fragment, int32_t token,
                    std::vector<TextFragment>& out) {
  const std::string& token_text = vocab.texts[token];
  const bool strip_left = vocab.has_attribute(token, kAttrLstrip);
  const bool strip_right = vocab.has_attribute(token, kAttrRstrip);
  size_t begin = fragment.offset;
  const size_t end = fragment.offset + fragment.length;
  bool found = false;
  while (begin < end) {
    const size_t match = text.substr(0, end).find(token_text, begin);
    if (match == std::string_view::npos) break;
    found = true;
    size_t left_end = match;
    if (strip_left) {
      while (left_end > begin && is_ascii_space(text[left_end - 1])) --left_end;
    }
    if (left_end > begin) out.push_back({-1, begin, left_end - begin});
    out.push_back({token, match, 0});
    begin = match + token_text.size();
    if (strip_right) {
      while (begin < end && is_ascii_space(text[begin])) ++begin;
    }
  }
  if (!found) return false;
  if (begin < end) out.push_back({-1, begin, end - begin});
  return true;
}

}  // namespace

std::vector<TextFragment> split_special_tokens(const Vocab& vocab, std::string_view text, bool parse_special) {
  std::vector<TextFragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, 0, text.size()});

  std::vector<TextFragment> next;
  for (int32_t token : vocab.special_token_ids) {
    if (!parse_special && vocab.has_attribute(token, kAttrControl | kAttrUnknown)) continue;
    bool changed = false;
    next.clear();
    for (const TextFragment& fragment : fragments) {
      if (fragment.is_token() || !split_fragment(vocab, text, fragment, token, next)) {
        next.push_back(fragment);
      } else {
        changed = true;
      }
    }
    if (changed) fragments.swap(next);
  }
  return fragments;
}

}  // namespace nucleus
