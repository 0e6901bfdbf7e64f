// Jinja source → tokens, with the whitespace rules Hugging Face renders chat templates under:
// trim_blocks (the first newline after a block or comment tag is dropped), lstrip_blocks (spaces and
// tabs before a block or comment tag at the start of a line are dropped), "-" inside a tag delimiter
// strips all whitespace on that side, "+" turns the automatic rules off there, and one trailing newline
// of the source is dropped (keep_trailing_newline = False). Comments produce no tokens.
//
// The rules follow jinja2's lexer, including its one subtle condition: lstrip_blocks strips only when
// the text before the tag on its line is all spaces/tabs AND the line really starts there (a newline
// in the text, or the previous tag's end consumed one, or the template's start).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nucleus::jinja {

enum class TokenType : uint8_t {
  text,            // literal template text (whitespace rules applied)
  variable_begin,  // {{
  variable_end,    // }}
  block_begin,     // {%
  block_end,       // %}
  name,            // identifiers and keywords (if, for, in, and, true, ...)
  string,          // a string literal, unescaped
  integer,
  floating,
  operator_token,  // + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  end_of_input,
};

struct Token {
  TokenType type = TokenType::end_of_input;
  std::string value;  // text, name, the unescaped string, or the operator
  int64_t integer = 0;
  double floating = 0.0;
  int line = 1;  // 1-based line of the token's start in the source, for error messages
};

// Throws Error naming the line for an unterminated tag, comment or string, or a character that is not
// Jinja syntax.
std::vector<Token> tokenize_jinja(std::string_view source);

}  // namespace nucleus::jinja
