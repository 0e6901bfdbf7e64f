// Executing a parsed template: scopes, statements, expressions and the globals chat templates call.
#include "tokenizer/jinja_interpreter.h"

#include <deque>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_operations.h"
#include "tokenizer/jinja_parser.h"

namespace nucleus::jinja {

namespace {

// An error whose message already names the template line, so enclosing statements pass it on as is.
class LocatedError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void fail_at(int line, const std::string& what) {
  throw LocatedError("chat template line " + std::to_string(line) + ": " + what);
}

// jinja2's scoping: the template and each macro call have a scope, and so does each for-loop
// iteration (a `set` inside a loop is gone after it and not seen by the next iteration); `if` blocks
// share their enclosing scope. Lookups walk outwards to the template's variables, then the globals.
struct Scope {
  Scope* parent = nullptr;
  std::unordered_map<std::string, Value> variables;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      const auto it = s->variables.find(name);
      if (it != s->variables.end()) return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { normal, break_loop, continue_loop };

// Every filter and test name must be one jinja2 knows: jinja2 refuses the others when it compiles
// the template — except inside an if statement or a conditional expression (its "soft" frames),
// where the error waits until the filter runs. A loop, macro, call, filter or set block opens a new
// frame, which is not soft again. `soft` says whether `e` sits in such a soft frame.
void check_names(const Expression* e, bool soft) {
  if (!e) return;
  if (e->kind == ExpressionKind::conditional) soft = true;
  if (!soft && e->kind == ExpressionKind::filter && !is_known_filter(e->name)) fail_at(e->line, "no filter named '" + e->name + "'");
  if (!soft && e->kind == ExpressionKind::test && !is_known_test(e->name)) fail_at(e->line, "no test named '" + e->name + "'");
  for (const auto& child : e->children) check_names(child.get(), soft);
  for (const auto& [key, child] : e->keyword_arguments) check_names(child.get(), soft);
}

void check_names(const Body& body, bool soft) {
  for (const Statement& s : body) {
    check_names(s.expression.get(), soft);
    for (const auto& p : s.parameters) check_names(p.default_value.get(), soft);
    switch (s.kind) {
      case StatementKind::if_chain:
        for (const auto& c : s.conditions) check_names(c.get(), true);
        for (const Body& b : s.bodies) check_names(b, true);
        break;
      case StatementKind::for_loop:
        check_names(s.condition.get(), false);
        check_names(s.body, false);
        check_names(s.else_body, soft);
        break;
      default: check_names(s.body, false);
    }
  }
}

class Renderer {
 public:
  Renderer(const Dict& variables, const RenderOptions& options) : options_(options) {
    install_globals();
    Scope& root = new_scope(&globals_);
    for (const auto& [key, value] : variables.entries()) root.variables[to_python_string(key)] = value;
    root_ = &root;
  }

  std::string render(const Body& body) {
    std::string out;
    execute(body, *root_, out);
    return out;
  }

 private:
  const RenderOptions& options_;
  Scope globals_;
  Scope* root_ = nullptr;
  // Every scope lives until the render ends: macros keep a pointer to the scope they were defined in.
  std::deque<Scope> scopes_;
  static constexpr int kMaxMacroDepth = 150;
  int macro_depth_ = 0;

  Scope& new_scope(Scope* parent) {
    scopes_.emplace_back();
    scopes_.back().parent = parent;
    return scopes_.back();
  }

  void install_globals();

  // ---- statements ----

  Flow execute(const Body& body, Scope& scope, std::string& out) {
    for (const Statement& s : body) {
      Flow flow = Flow::normal;
      try {
        flow = execute(s, scope, out);
      } catch (const LocatedError&) {
        throw;
      } catch (const Error& e) {
        fail_at(s.line, e.what());
      }
      if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
  }

  Flow execute(const Statement& s, Scope& scope, std::string& out) {
    switch (s.kind) {
      case StatementKind::text: out += s.text; return Flow::normal;
      case StatementKind::output:
        out += to_python_string(evaluate(*s.expression, scope));
        check_string_size(out.size());
        return Flow::normal;
      case StatementKind::if_chain:
        for (size_t i = 0; i < s.bodies.size(); ++i)
          if (i >= s.conditions.size() || is_truthy(evaluate(*s.conditions[i], scope))) return execute(s.bodies[i], scope, out);
        return Flow::normal;
      case StatementKind::for_loop: execute_for(s, scope, out); return Flow::normal;
      case StatementKind::set: {
        Value value = evaluate(*s.expression, scope);
        if (!s.attribute.empty()) {
          const Value* target = scope.find(s.targets[0]);
          if (!target || target->kind != ValueKind::namespace_object)
            throw Error("cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
          target->dict->set(Value::from_string(s.attribute), std::move(value));
        } else {
          assign(s.targets, std::move(value), scope);
        }
        return Flow::normal;
      }
      case StatementKind::set_block: {
        std::string captured;
        Scope& inner = new_scope(&scope);
        execute(s.body, inner, captured);
        scope.variables[s.targets[0]] = Value::from_string(std::move(captured));
        return Flow::normal;
      }
      case StatementKind::macro: scope.variables[s.name] = make_macro(s, scope); return Flow::normal;
      case StatementKind::call_block: {
        Value caller = make_caller(s, scope);
        out += to_python_string(evaluate_call(*s.expression, scope, &caller));
        return Flow::normal;
      }
      case StatementKind::filter_block: {
        std::string captured;
        execute(s.body, scope, captured);
        out += to_python_string(apply_filter_chain(*s.expression, Value::from_string(std::move(captured)), scope));
        return Flow::normal;
      }
      case StatementKind::generation: {
        // transformers implements it as a call block, so its body has a scope of its own.
        Scope& inner = new_scope(&scope);
        execute(s.body, inner, out);
        return Flow::normal;
      }
      case StatementKind::break_loop: return Flow::break_loop;
      case StatementKind::continue_loop: return Flow::continue_loop;
    }
    return Flow::normal;
  }

  // `set a = v` binds; `set a, b = v` unpacks a sequence of exactly that many items.
  static void assign(const std::vector<std::string>& targets, Value value, Scope& scope) {
    if (targets.size() == 1) {
      scope.variables[targets[0]] = std::move(value);
      return;
    }
    std::vector<Value> items = iterate(value);
    if (items.size() != targets.size())
      throw Error(items.size() < targets.size() ? "not enough values to unpack (expected " + std::to_string(targets.size()) + ")"
                                                : "too many values to unpack (expected " + std::to_string(targets.size()) + ")");
    for (size_t i = 0; i < targets.size(); ++i) scope.variables[targets[i]] = std::move(items[i]);
  }

  void execute_for(const Statement& s, Scope& scope, std::string& out) {
    std::vector<Value> items = iterate(evaluate(*s.expression, scope));
    if (s.condition) {
      std::vector<Value> kept;
      for (Value& item : items) {
        Scope& probe = new_scope(&scope);
        assign(s.targets, item, probe);
        if (is_truthy(evaluate(*s.condition, probe))) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      Scope& iteration = new_scope(&scope);
      assign(s.targets, items[static_cast<size_t>(i)], iteration);
      Dict loop;
      loop.set(Value::from_string("index"), Value::from_int(i + 1));
      loop.set(Value::from_string("index0"), Value::from_int(i));
      loop.set(Value::from_string("revindex"), Value::from_int(n - i));
      loop.set(Value::from_string("revindex0"), Value::from_int(n - i - 1));
      loop.set(Value::from_string("first"), Value::from_bool(i == 0));
      loop.set(Value::from_string("last"), Value::from_bool(i == n - 1));
      loop.set(Value::from_string("length"), Value::from_int(n));
      loop.set(Value::from_string("depth"), Value::from_int(1));
      loop.set(Value::from_string("depth0"), Value::from_int(0));
      if (i > 0) loop.set(Value::from_string("previtem"), items[static_cast<size_t>(i - 1)]);
      if (i + 1 < n) loop.set(Value::from_string("nextitem"), items[static_cast<size_t>(i + 1)]);
      loop.set(Value::from_string("cycle"), Value::from_function("loop.cycle", [i](CallArguments& args) {
                 if (args.positional.empty()) throw Error("no items for cycling given");
                 return args.positional[static_cast<size_t>(i) % args.positional.size()];
               }));
      iteration.variables["loop"] = Value::from_dict(std::move(loop));
      if (execute(s.body, iteration, out) == Flow::break_loop) break;
    }
    if (n == 0) execute(s.else_body, scope, out);
  }

  // Binds a macro's parameters (positional, then keyword, then defaults evaluated at call time) and
  // renders its body; the result is a plain string, as macros return in a non-autoescaping env.
  Value call_macro(const Statement& macro, Scope& defined_in, CallArguments& args) {
    // Python stops runaway recursion near 1000 frames; a jinja2 macro call takes several.
    if (macro_depth_ >= kMaxMacroDepth) throw Error("maximum recursion depth exceeded in macro '" + macro.name + "'");
    ++macro_depth_;
    struct DepthGuard {
      int& depth;
      ~DepthGuard() { --depth; }
    } guard{macro_depth_};
    Scope& scope = new_scope(&defined_in);
    if (args.positional.size() > macro.parameters.size())
      throw Error("macro '" + macro.name + "' takes not more than " + std::to_string(macro.parameters.size()) + " argument(s)");
    const Value* caller = nullptr;
    for (const auto& [key, value] : args.keyword) {
      if (key == "caller") {  // from a {% call %} block
        caller = &value;
        continue;
      }
      bool known = false;
      for (const MacroParameter& p : macro.parameters) known = known || p.name == key;
      if (!known) throw Error("macro '" + macro.name + "' takes no keyword argument '" + key + "'");
    }
    for (size_t i = 0; i < macro.parameters.size(); ++i) {
      const MacroParameter& p = macro.parameters[i];
      const Value* given = i < args.positional.size() ? &args.positional[i] : nullptr;
      for (const auto& [key, value] : args.keyword)
        if (key == p.name) {
          if (given) throw Error("macro '" + macro.name + "' got multiple values for argument '" + key + "'");
          given = &value;
        }
      if (given) {
        scope.variables[p.name] = *given;
      } else if (p.default_value) {
        scope.variables[p.name] = evaluate(*p.default_value, scope);
      } else {
        scope.variables[p.name] = Value::undefined(p.name);  // jinja2: a missing argument is undefined
      }
    }
    if (caller) scope.variables["caller"] = *caller;
    std::string out;
    execute(macro.body, scope, out);
    return Value::from_string(std::move(out));
  }

  Value make_macro(const Statement& macro, Scope& scope) {
    Scope* defined_in = &scope;
    return Value::from_function(macro.name, [this, &macro, defined_in](CallArguments& args) {
      return call_macro(macro, *defined_in, args);
    });
  }

  Value make_caller(const Statement& block, Scope& scope) {
    Scope* defined_in = &scope;
    return Value::from_function("caller", [this, &block, defined_in](CallArguments& args) {
      return call_macro_body(block, *defined_in, args);
    });
  }

  Value call_macro_body(const Statement& block, Scope& defined_in, CallArguments& args) {
    Scope& scope = new_scope(&defined_in);
    for (size_t i = 0; i < block.parameters.size(); ++i) {
      const MacroParameter& p = block.parameters[i];
      const Value* given = argument(args, i, p.name);
      scope.variables[p.name] = given ? *given : p.default_value ? evaluate(*p.default_value, scope) : Value::undefined(p.name);
    }
    std::string out;
    execute(block.body, scope, out);
    return Value::from_string(std::move(out));
  }

  // ---- expressions ----

  CallArguments evaluate_arguments(const Expression& e, size_t first_child, Scope& scope) {
    CallArguments args;
    for (size_t i = first_child; i < e.children.size(); ++i) args.positional.push_back(evaluate(*e.children[i], scope));
    for (const auto& [key, child] : e.keyword_arguments) args.keyword.emplace_back(key, evaluate(*child, scope));
    return args;
  }

  Value evaluate_call(const Expression& e, Scope& scope, const Value* caller) {
    const Value callee = evaluate(*e.children[0], scope);
    CallArguments args = evaluate_arguments(e, 1, scope);
    if (callee.kind != ValueKind::callable) {
      require_defined(callee);
      throw Error(std::string("'") + type_name(callee) + "' object is not callable");
    }
    if (caller) {
      // A call block hands the macro its body as `caller`.
      args.keyword.emplace_back("caller", *caller);
    }
    return callee.callable->function(args);
  }

  // The filters of a {% filter %} block, innermost first, applied to the block's output.
  Value apply_filter_chain(const Expression& e, Value input, Scope& scope) {
    if (e.kind != ExpressionKind::filter) return input;
    Value inner = apply_filter_chain(*e.children[0], std::move(input), scope);
    CallArguments args = evaluate_arguments(e, 1, scope);
    return apply_filter(e.name, inner, args);
  }

  Value evaluate(const Expression& e, Scope& scope) {
    switch (e.kind) {
      case ExpressionKind::literal: return e.literal;
      case ExpressionKind::name: {
        const Value* found = scope.find(e.name);
        return found ? *found : Value::undefined(e.name);
      }
      case ExpressionKind::list:
      case ExpressionKind::tuple: {
        std::vector<Value> items;
        for (const auto& child : e.children) items.push_back(evaluate(*child, scope));
        return Value::from_list(std::move(items), e.kind == ExpressionKind::tuple);
      }
      case ExpressionKind::dict: {
        Dict dict;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) dict.set(evaluate(*e.children[i], scope), evaluate(*e.children[i + 1], scope));
        return Value::from_dict(std::move(dict));
      }
      case ExpressionKind::attribute: return get_attribute(evaluate(*e.children[0], scope), e.name);
      case ExpressionKind::subscript: return get_item(evaluate(*e.children[0], scope), evaluate(*e.children[1], scope));
      case ExpressionKind::slice: {
        const Value object = evaluate(*e.children[0], scope);
        auto part = [&](size_t i) { return e.children[i] ? evaluate(*e.children[i], scope) : Value::undefined(); };
        return slice_value(object, part(1), part(2), part(3));
      }
      case ExpressionKind::call: return evaluate_call(e, scope, nullptr);
      case ExpressionKind::filter: {
        const Value input = evaluate(*e.children[0], scope);
        CallArguments args = evaluate_arguments(e, 1, scope);
        return apply_filter(e.name, input, args);
      }
      case ExpressionKind::test: {
        const Value input = evaluate(*e.children[0], scope);
        CallArguments args = evaluate_arguments(e, 1, scope);
        return Value::from_bool(apply_test(e.name, input, args) != e.negated);
      }
      case ExpressionKind::unary: {
        const Value operand = evaluate(*e.children[0], scope);
        if (e.name == "not") return Value::from_bool(!is_truthy(operand));
        if (e.name == "-") return negate(operand);
        require_defined(operand);
        if (!operand.is_number()) throw Error(std::string("bad operand type for unary +: '") + type_name(operand) + "'");
        return operand.kind == ValueKind::boolean ? Value::from_int(operand.boolean) : operand;
      }
      case ExpressionKind::binary: {
        if (e.name == "and" || e.name == "or") {
          Value left = evaluate(*e.children[0], scope);
          if (is_truthy(left) == (e.name == "or")) return left;
          return evaluate(*e.children[1], scope);
        }
        const Value left = evaluate(*e.children[0], scope);
        return binary_operation(e.name, left, evaluate(*e.children[1], scope));
      }
      case ExpressionKind::compare: {
        Value left = evaluate(*e.children[0], scope);
        for (size_t i = 0; i < e.operators.size(); ++i) {
          Value right = evaluate(*e.children[i + 1], scope);
          if (!compare_values(e.operators[i], left, right)) return Value::from_bool(false);
          left = std::move(right);
        }
        return Value::from_bool(true);
      }
      case ExpressionKind::conditional:
        if (is_truthy(evaluate(*e.children[1], scope))) return evaluate(*e.children[0], scope);
        return e.children[2] ? evaluate(*e.children[2], scope) : Value::undefined();
    }
    return Value::undefined();
  }
};

std::string format_time(const std::tm& time, const std::string& format) {
  if (format.empty()) return "";
  std::string buffer(256 + format.size() * 8, '\0');
  const size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &time);
  buffer.resize(n);
  return buffer;
}

void Renderer::install_globals() {
  auto& g = globals_.variables;
  g["raise_exception"] = Value::from_function("raise_exception", [](CallArguments& args) -> Value {
    throw Error("the template raised an exception: " + (args.positional.empty() ? std::string() : to_python_string(args.positional[0])));
  });
  g["strftime_now"] = Value::from_function("strftime_now", [this](CallArguments& args) {
    const Value* format = argument(args, 0, "format");
    if (!format || format->kind != ValueKind::string) throw Error("strftime_now() needs a format string");
    std::tm time{};
    if (options_.now) {
      time = *options_.now;
    } else {
      const std::time_t now = std::time(nullptr);
      localtime_r(&now, &time);
    }
    return Value::from_string(format_time(time, format->string));
  });
  g["range"] = Value::from_function("range", [](CallArguments& args) {
    std::vector<int64_t> bounds;
    for (const Value& v : args.positional) {
      if (v.kind != ValueKind::integer && v.kind != ValueKind::boolean)
        throw Error(std::string("'") + type_name(v) + "' object cannot be interpreted as an integer");
      bounds.push_back(v.kind == ValueKind::boolean ? v.boolean : v.integer);
    }
    if (bounds.empty() || bounds.size() > 3) throw Error("range expected 1 to 3 arguments");
    const int64_t start = bounds.size() > 1 ? bounds[0] : 0;
    const int64_t stop = bounds.size() > 1 ? bounds[1] : bounds[0];
    const int64_t step = bounds.size() > 2 ? bounds[2] : 1;
    if (step == 0) throw Error("range() arg 3 must not be zero");
    // The sandbox's limit (MAX_RANGE) keeps a template from allocating without bound.
    int64_t span = 0;
    if (__builtin_sub_overflow(stop, start, &span) || span / step > 100000) throw Error("range too big");
    // The count first, so no step can run past the 64-bit range.
    int64_t count = 0;
    if (span != 0 && (span > 0) == (step > 0)) count = span / step + (span % step != 0 ? 1 : 0);
    std::vector<Value> items;
    for (int64_t k = 0; k < count; ++k) items.push_back(Value::from_int(start + k * step));
    return Value::from_list(std::move(items));
  });
  g["namespace"] = Value::from_function("namespace", [](CallArguments& args) {
    Value ns = Value::new_namespace();
    for (const Value& v : args.positional) {
      if (v.kind != ValueKind::dict) throw Error("namespace() takes keyword arguments or a mapping");
      for (const auto& [key, value] : v.dict->entries()) ns.dict->set(key, value);
    }
    for (const auto& [key, value] : args.keyword) ns.dict->set(Value::from_string(key), value);
    return ns;
  });
  g["dict"] = Value::from_function("dict", [](CallArguments& args) {
    Dict dict;
    for (const Value& v : args.positional) {
      if (v.kind != ValueKind::dict) throw Error("dict() positional argument must be a mapping");
      for (const auto& [key, value] : v.dict->entries()) dict.set(key, value);
    }
    for (const auto& [key, value] : args.keyword) dict.set(Value::from_string(key), value);
    return Value::from_dict(std::move(dict));
  });
}

}  // namespace

JinjaTemplate::JinjaTemplate(std::string_view source) : body_(parse_jinja(source)) { check_names(body_, false); }

std::string JinjaTemplate::render(const Dict& variables, const RenderOptions& options) const {
  Renderer renderer(variables, options);
  return renderer.render(body_);
}

}  // namespace nucleus::jinja
