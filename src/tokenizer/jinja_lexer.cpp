// The Jinja lexer: template text and tags, with Hugging Face's whitespace settings.
#include "tokenizer/jinja_lexer.h"

#include <cctype>
#include <cstdlib>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace nucleus::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// jinja2 joins the source's lines with "\n" and drops one trailing newline.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : source_(std::move(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;  // the previous tag's end consumed a newline (or nothing came before)
    while (pos_ < source_.size()) {
      const size_t tag = find_tag(pos_);
      std::string text = source_.substr(pos_, tag - pos_);
      const int text_line = line_;
      advance_to(tag);
      if (tag == source_.size()) {
        emit_text(std::move(text), text_line);
        break;
      }
      const char kind = source_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < source_.size() ? source_[tag + 2] : '\0';
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop the spaces and tabs between the line's start and the tag.
        const size_t line_begin = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_begin > 0 || line_starting) && text.find_first_not_of(" \t", line_begin) == std::string::npos)
          text.erase(line_begin);
      }
      emit_text(std::move(text), text_line);
      advance_to(tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0));
      if (kind == '#') {
        line_starting = skip_comment();
      } else {
        line_starting = lex_tag(kind == '{');
      }
    }
    tokens_.push_back(Token{TokenType::end_of_input, "", 0, 0.0, line_});
    return std::move(tokens_);
  }

 private:
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("chat template line " + std::to_string(line_) + ": " + what);
  }

  void advance_to(size_t to) {
    for (; pos_ < to; ++pos_)
      if (source_[pos_] == '\n') ++line_;
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < source_.size(); ++i)
      if (source_[i] == '{' && (source_[i + 1] == '{' || source_[i + 1] == '%' || source_[i + 1] == '#')) return i;
    return source_.size();
  }

  void emit_text(std::string text, int line) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenType::text, std::move(text), 0, 0.0, line});
  }

  // After a tag's closing delimiter: "-" eats all following whitespace; a block or comment end eats
  // one newline (trim_blocks) unless marked "+". Returns whether the end consumed a newline.
  bool finish_tag_end(size_t end, bool dash, bool plus, bool trim_newline) {
    advance_to(end);
    bool consumed_newline = false;
    if (dash) {
      while (pos_ < source_.size() && is_space(source_[pos_])) {
        consumed_newline = source_[pos_] == '\n';
        advance_to(pos_ + 1);
      }
    } else if (!plus && trim_newline && pos_ < source_.size() && source_[pos_] == '\n') {
      advance_to(pos_ + 1);
      consumed_newline = true;
    }
    return consumed_newline;
  }

  bool skip_comment() {
    const int start_line = line_;
    const size_t close = source_.find("#}", pos_);
    if (close == std::string::npos) {
      line_ = start_line;
      fail("unterminated comment {# ... #}");
    }
    const bool dash = close > pos_ && source_[close - 1] == '-';
    return finish_tag_end(close + 2, dash, false, true);
  }

  // Tokens of one {{ ... }} or {% ... %} up to its closing delimiter. A closing delimiter inside open
  // brackets is not one ({{ {'a': {'b': 1}} }}), as in jinja2.
  bool lex_tag(bool variable) {
    const int start_line = line_;
    tokens_.push_back(Token{variable ? TokenType::variable_begin : TokenType::block_begin, "", 0, 0.0, line_});
    int depth = 0;
    const char close_first = variable ? '}' : '%';
    while (true) {
      while (pos_ < source_.size() && is_space(source_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= source_.size()) {
        line_ = start_line;
        fail(std::string("unterminated ") + (variable ? "{{ ... }}" : "{% ... %}"));
      }
      const char c = source_[pos_];
      if (depth == 0) {
        // "-}}" / "-%}", "+%}" and "}}" / "%}" end the tag.
        const bool signed_end = (c == '-' || c == '+') && pos_ + 2 < source_.size() && source_[pos_ + 1] == close_first &&
                                source_[pos_ + 2] == '}';
        const bool plain_end = c == close_first && pos_ + 1 < source_.size() && source_[pos_ + 1] == '}';
        if (signed_end || plain_end) {
          tokens_.push_back(Token{variable ? TokenType::variable_end : TokenType::block_end, "", 0, 0.0, line_});
          return finish_tag_end(pos_ + (signed_end ? 3 : 2), signed_end && c == '-', signed_end && c == '+', !variable);
        }
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t end = pos_;
        while (end < source_.size() && (std::isalnum(static_cast<unsigned char>(source_[end])) || source_[end] == '_')) ++end;
        tokens_.push_back(Token{TokenType::name, source_.substr(pos_, end - pos_), 0, 0.0, line_});
        advance_to(end);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static constexpr std::string_view kTwoCharOperators[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (std::string_view two : kTwoCharOperators)
          if (source_.compare(pos_, 2, two) == 0) op = std::string(two);
        if (op.size() == 1 && std::string_view("+-*/%~=.,:|()[]{}<>").find(c) == std::string_view::npos)
          fail(std::string("unexpected character '") + c + "' in a tag");
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        tokens_.push_back(Token{TokenType::operator_token, op, 0, 0.0, line_});
        advance_to(pos_ + op.size());
      }
    }
  }

  void lex_number() {
    size_t end = pos_;
    auto digits = [&] {
      while (end < source_.size() && (std::isdigit(static_cast<unsigned char>(source_[end])) || source_[end] == '_')) ++end;
    };
    digits();
    bool is_float = false;
    if (end + 1 < source_.size() && source_[end] == '.' && std::isdigit(static_cast<unsigned char>(source_[end + 1]))) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      size_t exponent = end + 1;
      if (exponent < source_.size() && (source_[exponent] == '+' || source_[exponent] == '-')) ++exponent;
      if (exponent < source_.size() && std::isdigit(static_cast<unsigned char>(source_[exponent]))) {
        is_float = true;
        end = exponent;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < end; ++i)
      if (source_[i] != '_') text += source_[i];
    Token token{is_float ? TokenType::floating : TokenType::integer, text, 0, 0.0, line_};
    if (is_float) {
      token.floating = std::strtod(text.c_str(), nullptr);
    } else {
      token.integer = std::strtoll(text.c_str(), nullptr, 10);
    }
    tokens_.push_back(std::move(token));
    advance_to(end);
  }

  // A Python string literal's escapes (what jinja2 applies): \n \t \r \\ \' \" \xHH \uHHHH \UHHHHHHHH
  // \0; an unknown escape keeps its backslash.
  void lex_string(char quote) {
    const int start_line = line_;
    std::string value;
    size_t i = pos_ + 1;
    auto hex = [&](size_t at, size_t n) -> uint32_t {
      if (at + n > source_.size()) fail("bad escape in a string literal");
      uint32_t v = 0;
      for (size_t k = 0; k < n; ++k) {
        const char h = source_[at + k];
        if (!std::isxdigit(static_cast<unsigned char>(h))) fail("bad escape in a string literal");
        v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      return v;
    };
    while (true) {
      if (i >= source_.size()) {
        line_ = start_line;
        fail("unterminated string literal");
      }
      const char c = source_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= source_.size()) {  // a backslash ending the source: reported as unterminated
        i = source_.size();
        continue;
      }
      const char e = source_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // a line continuation
        case 'x': unicode::append_utf8(hex(i, 2), value); i += 2; break;
        case 'u': unicode::append_utf8(hex(i, 4), value); i += 4; break;
        case 'U': unicode::append_utf8(hex(i, 8), value); i += 8; break;
        default:
          value += '\\';
          value += e;
      }
    }
    tokens_.push_back(Token{TokenType::string, std::move(value), 0, 0.0, line_});
    advance_to(i + 1);
  }
};

}  // namespace

std::vector<Token> tokenize_jinja(std::string_view source) { return Lexer(normalize_newlines(source)).run(); }

}  // namespace nucleus::jinja
