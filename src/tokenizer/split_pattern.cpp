#include "tokenizer/split_pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace nucleus {

namespace {

// Unicode White_Space as a class body (see the header for why PCRE2's \s is not used).
constexpr std::string_view kWhitespaceClassBody = "\\t-\\r \\x{85}\\p{Z}";

// Rewrites \s and \S to the White_Space class; everything else is copied. Inside a character class
// \s becomes the class body; a negated \S inside a class cannot be expressed that way and is rejected.
std::string expand_whitespace_escapes(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char escaped = pattern[++i];
      if (escaped == 's') {
        if (in_class) {
          out += kWhitespaceClassBody;
        } else {
          out += '[';
          out += kWhitespaceClassBody;
          out += ']';
        }
      } else if (escaped == 'S') {
        if (in_class) throw Error("pre-tokenizer pattern uses \\S inside a character class: " + std::string(pattern));
        out += "[^";
        out += kWhitespaceClassBody;
        out += ']';
      } else {
        out += c;
        out += escaped;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  const int length = pcre2_get_error_message(error_code, buffer, sizeof buffer);
  return length < 0 ? "PCRE2 error " + std::to_string(error_code) : std::string(reinterpret_cast<char*>(buffer), length);
}

}  // namespace

struct SplitPattern::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

struct SplitPattern::Scratch::State {
  // One ovector pair is enough: only the whole match is used, never capture groups.
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  ~State() { pcre2_match_data_free(match_data); }
};

SplitPattern::Scratch::Scratch() : state_(std::make_unique<State>()) {
  if (!state_->match_data) throw Error("pre-tokenizer: out of memory creating PCRE2 match data");
}
SplitPattern::Scratch::~Scratch() = default;

SplitPattern::SplitPattern(std::string_view pattern) : pattern_(pattern), compiled_(std::make_unique<Compiled>()) {
  const std::string expanded = expand_whitespace_escapes(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(), options, &error_code,
                                  &error_offset, nullptr);
  if (!compiled_->code) {
    throw Error("pre-tokenizer pattern does not compile (" + pcre2_message(error_code) + " at offset " +
                std::to_string(error_offset) + "): " + pattern_);
  }
  // JIT is a speed-up only: when it is unavailable pcre2_match interprets the pattern.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

SplitPattern::~SplitPattern() = default;
SplitPattern::SplitPattern(SplitPattern&&) noexcept = default;
SplitPattern& SplitPattern::operator=(SplitPattern&&) noexcept = default;

void SplitPattern::split(std::string_view subject, Scratch& scratch, std::vector<std::string_view>& out) const {
  pcre2_match_data* match_data = scratch.state_->match_data;
  const auto* subject_bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t gap_begin = 0;     // start of the text not yet emitted
  size_t search_from = 0;   // where the next match may start
  while (search_from < subject.size()) {
    int rc = pcre2_match(compiled_->code, subject_bytes, subject.size(), search_from, 0, match_data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Deep backtracking on a very long run: the interpreter keeps its state on the heap instead.
      rc = pcre2_match(compiled_->code, subject_bytes, subject.size(), search_from, PCRE2_NO_JIT, match_data, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error("pre-tokenizer pattern failed to match (" + pcre2_message(rc) + "): " + pattern_);
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
    const size_t match_begin = ovector[0];
    const size_t match_end = ovector[1];
    if (match_end == match_begin) {
      // An empty match splits nothing; look again one byte further (gaps keep the bytes).
      search_from = match_begin + 1;
      continue;
    }
    if (match_begin > gap_begin) out.push_back(subject.substr(gap_begin, match_begin - gap_begin));
    out.push_back(subject.substr(match_begin, match_end - match_begin));
    gap_begin = search_from = match_end;
  }
  if (gap_begin < subject.size()) out.push_back(subject.substr(gap_begin));
}

}  // namespace nucleus
