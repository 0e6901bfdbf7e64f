// The parsed form of a Jinja template: expressions and statements, each carrying the source line it
// came from (every runtime error names it). The tree owns its nodes; a parsed template is immutable
// and may be rendered any number of times.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace nucleus::jinja {

enum class ExpressionKind : uint8_t {
  literal,      // literal
  name,         // name
  list,         // children: items
  tuple,        // children: items
  dict,         // children: key, value, key, value, ...
  attribute,    // children[0].name
  subscript,    // children[0][children[1]]
  slice,        // children[0][children[1]:children[2]:children[3]] (null children are omitted bounds)
  call,         // children[0](children[1..], keyword_arguments)
  filter,       // children[0] | name(children[1..], keyword_arguments)
  test,         // children[0] is [not] name(children[1..], keyword_arguments)
  unary,        // name ("-", "+", "not") children[0]
  binary,       // children[0] name children[1]: + - * / // % ** ~ and or
  compare,      // children[0] operators[0] children[1] operators[1] children[2] ... (chained)
  conditional,  // children[0] if children[1] else children[2] (children[2] null: undefined)
};

struct Expression;
using ExpressionPointer = std::unique_ptr<Expression>;

struct Expression {
  ExpressionKind kind = ExpressionKind::literal;
  int line = 0;
  Value literal;
  std::string name;  // variable, attribute, filter, test or operator name
  std::vector<ExpressionPointer> children;
  std::vector<std::pair<std::string, ExpressionPointer>> keyword_arguments;
  std::vector<std::string> operators;  // compare: ==, !=, <, <=, >, >=, in, not in
  bool negated = false;                // test: "is not"
};

enum class StatementKind : uint8_t {
  text,          // text
  output,        // {{ expression }}
  if_chain,      // if / elif ... / else
  for_loop,      // for targets in expression [if condition] body [else else_body]
  set,           // set targets = expression; or set targets[0].attribute = expression
  set_block,     // set targets[0] %} body {% endset
  macro,         // macro name(parameters) body
  call_block,    // call[(parameters)] expression %} body {% endcall
  filter_block,  // filter expression(filters applied to body's output) body
  generation,    // Hugging Face's {% generation %} body {% endgeneration %}: renders its body
  break_loop,
  continue_loop,
};

struct Statement;
using Body = std::vector<Statement>;

struct MacroParameter {
  std::string name;
  ExpressionPointer default_value;  // null: required
};

struct Statement {
  StatementKind kind = StatementKind::text;
  int line = 0;
  std::string text;                        // text
  ExpressionPointer expression;            // output, for iterable, set value, call expression, filter
  ExpressionPointer condition;             // for: the "if" filter
  std::vector<std::string> targets;        // for / set names
  std::string attribute;                   // set ns.attribute
  std::string name;                        // macro name
  std::vector<MacroParameter> parameters;  // macro / call-block parameters
  // if_chain: conditions[i] guards bodies[i]; a trailing body without condition is the else.
  std::vector<ExpressionPointer> conditions;
  std::vector<Body> bodies;
  Body body;       // for, set_block, macro, call_block, filter_block, generation
  Body else_body;  // for ... else
};

}  // namespace nucleus::jinja
