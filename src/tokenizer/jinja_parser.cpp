// The Jinja parser: a recursive descent over the lexer's tokens, one function per precedence level,
// following jinja2's parser so expressions group exactly as they do there.
#include "tokenizer/jinja_parser.h"

#include <initializer_list>

#include "core/error.h"
#include "tokenizer/jinja_lexer.h"

namespace nucleus::jinja {

namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_template() {
    Body body = parse_body({});
    if (current().type != TokenType::end_of_input) fail("unexpected '" + current().value + "'");
    return body;
  }

 private:
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  // Nesting (blocks, parentheses, lists, calls, unary operators) recurses; a bound keeps a hostile
  // template from exhausting the stack.
  static constexpr int kMaxDepth = 200;
  int depth_ = 0;
  struct DepthGuard {
    int& depth;
    ~DepthGuard() { --depth; }
  };
  DepthGuard enter() {
    if (++depth_ > kMaxDepth) fail("statements or expressions nested too deeply");
    return DepthGuard{depth_};
  }

  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  Token next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("chat template line " + std::to_string(current().line) + ": " + what);
  }
  [[noreturn]] void unsupported(const std::string& construct, int line) const {
    throw Error("chat template line " + std::to_string(line) + ": " + construct + " is not supported by nucleus's Jinja interpreter");
  }

  bool is_operator(std::string_view op) const { return current().type == TokenType::operator_token && current().value == op; }
  bool is_name(std::string_view name) const { return current().type == TokenType::name && current().value == name; }
  bool skip_operator(std::string_view op) {
    if (!is_operator(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }
  void expect_operator(std::string_view op) {
    if (!skip_operator(op)) fail("expected '" + std::string(op) + "', got '" + describe(current()) + "'");
  }
  std::string expect_name() {
    if (current().type != TokenType::name) fail("expected a name, got '" + describe(current()) + "'");
    return next().value;
  }
  void expect_block_end() {
    if (current().type != TokenType::block_end) fail("expected the end of the tag, got '" + describe(current()) + "'");
    ++pos_;
  }
  static std::string describe(const Token& token) {
    switch (token.type) {
      case TokenType::block_end: return "%}";
      case TokenType::variable_end: return "}}";
      case TokenType::end_of_input: return "end of template";
      default: return token.value;
    }
  }

  static ExpressionPointer make(ExpressionKind kind, int line) {
    auto e = std::make_unique<Expression>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ----

  // Statements up to a {% name %} tag whose name is one of `end_names` (left unconsumed: current() is
  // that name), or to the end of input when end_names is empty.
  Body parse_body(std::initializer_list<std::string_view> end_names) {
    Body body;
    while (true) {
      const Token& token = current();
      if (token.type == TokenType::end_of_input) {
        for (std::string_view end : end_names)
          if (end.substr(0, 3) == "end") fail("missing {% " + std::string(end) + " %}");
        return body;
      }
      if (token.type == TokenType::text) {
        Statement s;
        s.kind = StatementKind::text;
        s.line = token.line;
        s.text = token.value;
        body.push_back(std::move(s));
        ++pos_;
      } else if (token.type == TokenType::variable_begin) {
        Statement s;
        s.kind = StatementKind::output;
        s.line = token.line;
        ++pos_;
        s.expression = parse_tuple(true);
        if (current().type != TokenType::variable_end) fail("expected '}}', got '" + describe(current()) + "'");
        ++pos_;
        body.push_back(std::move(s));
      } else if (token.type == TokenType::block_begin) {
        const Token& name = peek();
        if (name.type == TokenType::name)
          for (std::string_view end : end_names)
            if (name.value == end) {
              ++pos_;
              return body;
            }
        ++pos_;
        body.push_back(parse_statement());
      } else {
        fail("unexpected '" + describe(token) + "'");
      }
    }
  }

  Statement parse_statement() {
    const DepthGuard guard = enter();
    const int line = current().line;
    if (current().type != TokenType::name) fail("expected a statement name, got '" + describe(current()) + "'");
    const std::string keyword = next().value;
    Statement s;
    s.line = line;
    if (keyword == "if") {
      s.kind = StatementKind::if_chain;
      s.conditions.push_back(parse_tuple(false));
      expect_block_end();
      while (true) {
        s.bodies.push_back(parse_body({"elif", "else", "endif"}));
        const std::string end = next().value;
        if (end == "elif") {
          s.conditions.push_back(parse_tuple(false));
          expect_block_end();
        } else if (end == "else") {
          expect_block_end();
          s.bodies.push_back(parse_body({"endif"}));
          next();
          expect_block_end();
          break;
        } else {
          expect_block_end();
          break;
        }
      }
    } else if (keyword == "for") {
      s.kind = StatementKind::for_loop;
      s.targets = parse_target_names();
      if (!skip_name("in")) fail("expected 'in' in the for statement");
      s.expression = parse_tuple(false);
      if (skip_name("if")) s.condition = parse_expression(true);
      if (is_name("recursive")) unsupported("a recursive for loop", line);
      expect_block_end();
      s.body = parse_body({"endfor", "else"});
      if (next().value == "else") {
        expect_block_end();
        s.else_body = parse_body({"endfor"});
        next();
      }
      expect_block_end();
    } else if (keyword == "set") {
      s.targets = parse_target_names();
      if (skip_operator(".")) {
        if (s.targets.size() != 1) fail("expected '=' after the set target");
        s.attribute = expect_name();
      }
      if (skip_operator("=")) {
        s.kind = StatementKind::set;
        s.expression = parse_tuple(true);
        expect_block_end();
      } else {
        if (s.targets.size() != 1 || !s.attribute.empty()) fail("a block set takes one name");
        if (is_operator("|")) unsupported("a filtered block set ({% set x | filter %})", line);
        s.kind = StatementKind::set_block;
        expect_block_end();
        s.body = parse_body({"endset"});
        next();
        expect_block_end();
      }
    } else if (keyword == "macro") {
      s.kind = StatementKind::macro;
      s.name = expect_name();
      s.parameters = parse_parameters();
      expect_block_end();
      s.body = parse_body({"endmacro"});
      next();
      if (current().type == TokenType::name) ++pos_;  // {% endmacro name %}
      expect_block_end();
    } else if (keyword == "call") {
      s.kind = StatementKind::call_block;
      if (is_operator("(")) s.parameters = parse_parameters();
      s.expression = parse_expression(true);
      if (s.expression->kind != ExpressionKind::call) fail("expected a macro call after 'call'");
      expect_block_end();
      s.body = parse_body({"endcall"});
      next();
      expect_block_end();
    } else if (keyword == "filter") {
      s.kind = StatementKind::filter_block;
      // The filters apply to a placeholder: the block's output becomes children[0] of the innermost.
      ExpressionPointer chain = parse_filter_call(make(ExpressionKind::literal, line), line);
      while (is_operator("|")) chain = parse_filter(std::move(chain));
      s.expression = std::move(chain);
      expect_block_end();
      s.body = parse_body({"endfilter"});
      next();
      expect_block_end();
    } else if (keyword == "generation") {
      s.kind = StatementKind::generation;
      expect_block_end();
      s.body = parse_body({"endgeneration"});
      next();
      expect_block_end();
    } else if (keyword == "break" || keyword == "continue") {
      s.kind = keyword == "break" ? StatementKind::break_loop : StatementKind::continue_loop;
      expect_block_end();
    } else {
      unsupported("the statement '" + keyword + "'", line);
    }
    return s;
  }

  // for / set targets: name, or names separated by commas, optionally in parentheses.
  std::vector<std::string> parse_target_names() {
    std::vector<std::string> names;
    const bool parenthesized = skip_operator("(");
    names.push_back(expect_name());
    while (skip_operator(",")) {
      if (current().type != TokenType::name) break;
      names.push_back(expect_name());
    }
    if (parenthesized) expect_operator(")");
    return names;
  }

  std::vector<MacroParameter> parse_parameters() {
    std::vector<MacroParameter> parameters;
    expect_operator("(");
    while (!skip_operator(")")) {
      if (!parameters.empty()) expect_operator(",");
      if (skip_operator(")")) break;
      MacroParameter p;
      p.name = expect_name();
      if (skip_operator("=")) p.default_value = parse_expression(true);
      parameters.push_back(std::move(p));
    }
    return parameters;
  }

  // ---- expressions ----

  // Comma-separated expressions make a tuple ("a, b"); one without a comma is itself.
  ExpressionPointer parse_tuple(bool with_conditional) {
    const int line = current().line;
    std::vector<ExpressionPointer> items;
    bool comma = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_operator(",")) break;
        comma = true;
      }
      if (at_expression_end()) break;
      items.push_back(with_conditional ? parse_expression(true) : parse_or());
    }
    if (!comma && items.size() == 1) return std::move(items[0]);
    if (items.empty() && !comma) fail("expected an expression, got '" + describe(current()) + "'");
    auto tuple = make(ExpressionKind::tuple, line);
    tuple->children = std::move(items);
    return tuple;
  }

  bool at_expression_end() const {
    const Token& t = current();
    if (t.type == TokenType::block_end || t.type == TokenType::variable_end || t.type == TokenType::end_of_input) return true;
    if (t.type == TokenType::operator_token && (t.value == ")" || t.value == "]" || t.value == "}")) return true;
    return t.type == TokenType::name && (t.value == "if" || t.value == "in" || t.value == "recursive");
  }

  ExpressionPointer parse_expression(bool with_conditional) {
    const DepthGuard guard = enter();
    ExpressionPointer expr = parse_or();
    if (!with_conditional) return expr;
    while (is_name("if")) {
      const int line = current().line;
      ++pos_;
      auto conditional = make(ExpressionKind::conditional, line);
      ExpressionPointer condition = parse_or();
      ExpressionPointer otherwise = skip_name("else") ? parse_expression(true) : nullptr;
      conditional->children.push_back(std::move(expr));
      conditional->children.push_back(std::move(condition));
      conditional->children.push_back(std::move(otherwise));
      expr = std::move(conditional);
    }
    return expr;
  }

  ExpressionPointer binary(std::string op, ExpressionPointer left, ExpressionPointer right, int line) {
    auto e = make(ExpressionKind::binary, line);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  ExpressionPointer parse_or() {
    ExpressionPointer left = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      left = binary("or", std::move(left), parse_and(), line);
    }
    return left;
  }

  ExpressionPointer parse_and() {
    ExpressionPointer left = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      left = binary("and", std::move(left), parse_not(), line);
    }
    return left;
  }

  ExpressionPointer parse_not() {
    const DepthGuard guard = enter();
    if (is_name("not")) {
      const int line = next().line;
      auto e = make(ExpressionKind::unary, line);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExpressionPointer parse_compare() {
    const int line = current().line;
    ExpressionPointer first = parse_math1();
    ExpressionPointer compare;
    while (true) {
      std::string op;
      const Token& t = current();
      if (t.type == TokenType::operator_token &&
          (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == "<=" || t.value == ">" || t.value == ">=")) {
        op = t.value;
        ++pos_;
      } else if (is_name("in")) {
        op = "in";
        ++pos_;
      } else if (is_name("not") && peek().type == TokenType::name && peek().value == "in") {
        op = "not in";
        pos_ += 2;
      } else {
        break;
      }
      if (!compare) {
        compare = make(ExpressionKind::compare, line);
        compare->children.push_back(std::move(first));
      }
      compare->operators.push_back(op);
      compare->children.push_back(parse_math1());
    }
    return compare ? std::move(compare) : std::move(first);
  }

  ExpressionPointer parse_math1() {
    ExpressionPointer left = parse_concat();
    while (is_operator("+") || is_operator("-")) {
      const Token op = next();
      left = binary(op.value, std::move(left), parse_concat(), op.line);
    }
    return left;
  }

  ExpressionPointer parse_concat() {
    ExpressionPointer left = parse_math2();
    while (is_operator("~")) {
      const int line = next().line;
      left = binary("~", std::move(left), parse_math2(), line);
    }
    return left;
  }

  ExpressionPointer parse_math2() {
    ExpressionPointer left = parse_pow();
    while (is_operator("*") || is_operator("/") || is_operator("//") || is_operator("%")) {
      const Token op = next();
      left = binary(op.value, std::move(left), parse_pow(), op.line);
    }
    return left;
  }

  ExpressionPointer parse_pow() {
    ExpressionPointer left = parse_unary(true);
    while (is_operator("**")) {
      const int line = next().line;
      left = binary("**", std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExpressionPointer parse_unary(bool with_filter) {
    const DepthGuard guard = enter();
    ExpressionPointer node;
    if (is_operator("-") || is_operator("+")) {
      const Token op = next();
      node = make(ExpressionKind::unary, op.line);
      node->name = op.value;
      node->children.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expression(std::move(node));
    return node;
  }

  ExpressionPointer parse_primary() {
    const Token token = current();
    switch (token.type) {
      case TokenType::name: {
        ++pos_;
        auto e = make(ExpressionKind::literal, token.line);
        if (token.value == "true" || token.value == "True") {
          e->literal = Value::from_bool(true);
        } else if (token.value == "false" || token.value == "False") {
          e->literal = Value::from_bool(false);
        } else if (token.value == "none" || token.value == "None") {
          e->literal = Value::none();
        } else {
          e->kind = ExpressionKind::name;
          e->name = token.value;
        }
        return e;
      }
      case TokenType::string: {
        std::string text;
        while (current().type == TokenType::string) text += next().value;  // adjacent literals join
        auto e = make(ExpressionKind::literal, token.line);
        e->literal = Value::from_string(std::move(text));
        return e;
      }
      case TokenType::integer: {
        ++pos_;
        auto e = make(ExpressionKind::literal, token.line);
        e->literal = Value::from_int(token.integer);
        return e;
      }
      case TokenType::floating: {
        ++pos_;
        auto e = make(ExpressionKind::literal, token.line);
        e->literal = Value::from_float(token.floating);
        return e;
      }
      case TokenType::operator_token:
        if (token.value == "(") {
          ++pos_;
          if (skip_operator(")")) return make(ExpressionKind::tuple, token.line);
          ExpressionPointer inner = parse_tuple(true);
          expect_operator(")");
          return inner;
        }
        if (token.value == "[") {
          ++pos_;
          auto e = make(ExpressionKind::list, token.line);
          while (!skip_operator("]")) {
            if (!e->children.empty()) expect_operator(",");
            if (skip_operator("]")) break;
            e->children.push_back(parse_expression(true));
          }
          return e;
        }
        if (token.value == "{") {
          ++pos_;
          auto e = make(ExpressionKind::dict, token.line);
          while (!skip_operator("}")) {
            if (!e->children.empty()) expect_operator(",");
            if (skip_operator("}")) break;
            e->children.push_back(parse_expression(true));
            expect_operator(":");
            e->children.push_back(parse_expression(true));
          }
          return e;
        }
        break;
      default: break;
    }
    fail("unexpected '" + describe(token) + "' in an expression");
  }

  ExpressionPointer parse_postfix(ExpressionPointer node) {
    while (true) {
      if (is_operator(".")) {
        const int line = next().line;
        if (current().type == TokenType::name) {
          auto e = make(ExpressionKind::attribute, line);
          e->name = next().value;
          e->children.push_back(std::move(node));
          node = std::move(e);
        } else if (current().type == TokenType::integer) {
          auto e = make(ExpressionKind::subscript, line);
          auto index = make(ExpressionKind::literal, line);
          index->literal = Value::from_int(next().integer);
          e->children.push_back(std::move(node));
          e->children.push_back(std::move(index));
          node = std::move(e);
        } else {
          fail("expected an attribute name after '.'");
        }
      } else if (is_operator("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_operator("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExpressionPointer parse_subscript(ExpressionPointer object) {
    const int line = next().line;  // [
    ExpressionPointer parts[3];
    int n_colons = 0;
    bool done = false;
    while (!done) {
      if (is_operator(":")) {
        ++pos_;
        if (++n_colons > 2) fail("too many ':' in a slice");
        continue;
      }
      if (is_operator("]")) break;
      if (is_operator(",")) unsupported("a tuple subscript", line);
      if (parts[n_colons]) fail("expected ']' or ':' in a subscript");
      parts[n_colons] = parse_expression(true);
    }
    expect_operator("]");
    auto e = make(n_colons ? ExpressionKind::slice : ExpressionKind::subscript, line);
    e->children.push_back(std::move(object));
    if (n_colons == 0) {
      if (!parts[0]) fail("empty subscript");
      e->children.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) e->children.push_back(std::move(p));
    }
    return e;
  }

  void parse_call_arguments(Expression& target) {
    expect_operator("(");
    bool first = true;
    while (!skip_operator(")")) {
      if (!first) expect_operator(",");
      first = false;
      if (skip_operator(")")) break;
      if (is_operator("*") || is_operator("**")) unsupported("*args / **kwargs in a call", current().line);
      if (current().type == TokenType::name && peek().type == TokenType::operator_token && peek().value == "=") {
        std::string key = next().value;
        ++pos_;
        target.keyword_arguments.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!target.keyword_arguments.empty()) fail("a positional argument after a keyword argument");
        target.children.push_back(parse_expression(true));
      }
    }
  }

  ExpressionPointer parse_call(ExpressionPointer callee) {
    auto e = make(ExpressionKind::call, current().line);
    e->children.push_back(std::move(callee));
    parse_call_arguments(*e);
    return e;
  }

  // "| name(arguments)" applied to node.
  ExpressionPointer parse_filter(ExpressionPointer node) {
    const int line = next().line;  // |
    return parse_filter_call(std::move(node), line);
  }

  // "name(arguments)" applied to node (after a "|", or first in a filter block).
  ExpressionPointer parse_filter_call(ExpressionPointer node, int line) {
    auto e = make(ExpressionKind::filter, line);
    e->name = expect_name();
    while (skip_operator(".")) e->name += "." + expect_name();
    e->children.push_back(std::move(node));
    if (is_operator("(")) parse_call_arguments(*e);
    return e;
  }

  ExpressionPointer parse_filter_expression(ExpressionPointer node) {
    while (true) {
      if (is_operator("|")) {
        node = parse_filter(std::move(node));
      } else if (is_name("is")) {
        const int line = next().line;
        auto e = make(ExpressionKind::test, line);
        e->negated = skip_name("not");
        e->name = expect_name();
        e->children.push_back(std::move(node));
        const Token& t = current();
        if (is_operator("(")) {
          parse_call_arguments(*e);
        } else if ((t.type == TokenType::name || t.type == TokenType::string || t.type == TokenType::integer ||
                    t.type == TokenType::floating || is_operator("[") || is_operator("{")) &&
                   !(is_name("else") || is_name("or") || is_name("and"))) {
          if (is_name("is")) fail("tests cannot be chained with 'is'");
          e->children.push_back(parse_postfix(parse_primary()));
        }
        node = std::move(e);
      } else if (is_operator("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }
};

}  // namespace

Body parse_jinja(std::string_view source) { return Parser(tokenize_jinja(source)).parse_template(); }

}  // namespace nucleus::jinja
