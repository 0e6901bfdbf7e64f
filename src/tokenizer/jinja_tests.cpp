// jinja2's tests (`value is name(arguments)`).
#include <cmath>

#include "core/error.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_operations.h"

namespace nucleus::jinja {

namespace {

// jinja2 3.1's test names; the implemented ones are handled in apply_test.
constexpr std::string_view kJinjaTests[] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter", "float",
    "ge", "gt", "greaterthan", "in", "integer", "iterable", "le", "lower", "lessthan", "lt", "mapping", "ne", "none",
    "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper", "==", "!=", "<", "<=", ">",
    ">=",
};

const Value& required_argument(const CallArguments& arguments, size_t index, std::string_view keyword, const std::string& test) {
  const Value* value = argument(arguments, index, keyword);
  if (!value) throw Error("test '" + test + "' needs an argument");
  return *value;
}

}  // namespace

bool is_known_test(std::string_view name) {
  for (std::string_view known : kJinjaTests)
    if (known == name) return true;
  return false;
}

bool apply_test(const std::string& name, const Value& value, CallArguments& arguments) {
  const ValueKind kind = value.kind;
  if (name == "defined") return kind != ValueKind::undefined;
  if (name == "undefined") return kind == ValueKind::undefined;
  if (name == "none") return kind == ValueKind::none;
  if (name == "boolean") return kind == ValueKind::boolean;
  if (name == "true") return kind == ValueKind::boolean && value.boolean;
  if (name == "false") return kind == ValueKind::boolean && !value.boolean;
  if (name == "string") return kind == ValueKind::string;
  if (name == "mapping") return kind == ValueKind::dict;
  if (name == "number") return kind == ValueKind::integer || kind == ValueKind::floating || kind == ValueKind::boolean;
  if (name == "integer") return kind == ValueKind::integer;  // True is a bool here, as jinja2 excludes it
  if (name == "float") return kind == ValueKind::floating;
  if (name == "iterable") return kind == ValueKind::list || kind == ValueKind::iterator || kind == ValueKind::dict || kind == ValueKind::string || kind == ValueKind::undefined;
  // jinja2: len() and __getitem__ work (Undefined has both).
  if (name == "sequence") return kind == ValueKind::list || kind == ValueKind::dict || kind == ValueKind::string || kind == ValueKind::undefined;
  if (name == "callable") return kind == ValueKind::callable;
  if (name == "escaped") return kind == ValueKind::string && value.is_markup;
  if (name == "odd" || name == "even") {
    if (kind != ValueKind::integer && kind != ValueKind::boolean) {
      require_defined(value);
      throw Error(std::string("test '") + name + "' needs an integer, got " + type_name(value));
    }
    const int64_t v = kind == ValueKind::boolean ? value.boolean : value.integer;
    return (v % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const Value& divisor = required_argument(arguments, 0, "num", name);
    const Value remainder = binary_operation("%", value, divisor);
    return values_equal(remainder, Value::from_int(0));
  }
  if (name == "lower" || name == "upper") {
    const std::string text = to_python_string(value);
    bool cased = false;
    for (unsigned char c : text) {
      if (std::isalpha(c)) {
        cased = true;
        if ((name == "lower") != static_cast<bool>(std::islower(c))) return false;
      }
    }
    return cased;
  }
  if (name == "sameas") {
    const Value& other = required_argument(arguments, 0, "other", name);
    if (value.kind != other.kind) return false;
    switch (value.kind) {
      case ValueKind::none:
      case ValueKind::undefined: return true;
      case ValueKind::boolean: return value.boolean == other.boolean;
      case ValueKind::list: return value.list == other.list;
      case ValueKind::dict:
      case ValueKind::namespace_object: return value.dict == other.dict;
      default: return values_equal(value, other);
    }
  }
  if (name == "in") return contains(required_argument(arguments, 0, "seq", name), value);
  static const std::pair<std::string_view, std::string_view> kComparisons[] = {
      {"eq", "=="}, {"equalto", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="}, {"lt", "<"}, {"lessthan", "<"},
      {"<", "<"}, {"le", "<="}, {"<=", "<="}, {"gt", ">"}, {"greaterthan", ">"}, {">", ">"}, {"ge", ">="}, {">=", ">="},
  };
  for (const auto& [test, op] : kComparisons)
    if (name == test) return compare_values(std::string(op), value, required_argument(arguments, 0, "b", name));
  throw Error("the test '" + name + "' is not supported by nucleus's Jinja interpreter");
}

}  // namespace nucleus::jinja
