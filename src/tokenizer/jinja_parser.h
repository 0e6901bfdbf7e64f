// Tokens → statement tree, with jinja2's grammar and operator precedence (loosest first):
//   a if c else b · or · and · not · comparisons (== != < <= > >= in, not in; chained) · + - · ~ ·
//   * / // % · ** · unary - + · postfix (.attr, [subscript or slice], (call)), then filters (|f) and
//   tests (is [not] t), which bind to the primary they follow.
// A statement or syntax the interpreter does not implement is an Error naming it and its line.
#pragma once
#include <string_view>

#include "tokenizer/jinja_ast.h"

namespace nucleus::jinja {

Body parse_jinja(std::string_view source);

}  // namespace nucleus::jinja
