// Python operator semantics for template values.
#include "tokenizer/jinja_operations.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/unicode.h"

namespace nucleus::jinja {

namespace {

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b) {
  throw Error(std::string("unsupported operand type(s) for ") + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

bool is_integral(const Value& v) { return v.kind == ValueKind::integer || v.kind == ValueKind::boolean; }
int64_t integral(const Value& v) { return v.kind == ValueKind::boolean ? v.boolean : v.integer; }

// Python's ints do not overflow; ours are 64 bits, and going past them is an error, never a wrap.
// `operation` is one of the __builtin_*_overflow functions.
template <typename Operation>
Value checked(Operation operation, int64_t a, int64_t b) {
  int64_t result = 0;
  if (operation(a, b, &result)) throw Error("integer overflow (nucleus's template integers are 64-bit)");
  return Value::from_int(result);
}
constexpr auto add = [](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); };
constexpr auto subtract = [](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); };
constexpr auto multiply = [](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); };

// Python's floor division and modulo on ints (the result takes the divisor's sign).
int64_t floor_divide(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_modulo(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Markup's HTML escaping (markupsafe.escape): what `Markup + str` applies to the str.
std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&#34;"; break;
      default: out += c;
    }
  }
  return out;
}

Value repeat(const Value& sequence, int64_t count) {
  // Python would build any size; a template has no business making more than this.
  constexpr int64_t kMaxItems = int64_t{1} << 24;
  const int64_t unit = sequence.kind == ValueKind::string ? static_cast<int64_t>(sequence.string.size())
                                                          : static_cast<int64_t>(sequence.list->size());
  if (count > 0 && unit > 0 && count > kMaxItems / unit) throw Error("repetition result too large");
  // An empty sequence repeated is empty however large the count ('' * 4 ** 30 looped 2^60 times).
  if (unit == 0) count = 0;
  if (sequence.kind == ValueKind::string) {
    std::string out;
    for (int64_t i = 0; i < count; ++i) out += sequence.string;
    return Value::from_string(out);
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < count; ++i) out.insert(out.end(), sequence.list->begin(), sequence.list->end());
  return Value::from_list(std::move(out), sequence.is_tuple);
}

// -1, 0, 1 as Python orders two values; raises where Python's < raises.
int order(const Value& a, const Value& b, const std::string& op) {
  if (a.is_number() && b.is_number()) {
    if (is_integral(a) && is_integral(b)) return integral(a) < integral(b) ? -1 : integral(a) > integral(b);
    return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double();
  }
  if (a.kind == ValueKind::string && b.kind == ValueKind::string) return a.string.compare(b.string) < 0 ? -1 : a.string != b.string;
  if (a.kind == ValueKind::list && b.kind == ValueKind::list && a.is_tuple == b.is_tuple) {
    const size_t n = std::min(a.list->size(), b.list->size());
    for (size_t i = 0; i < n; ++i)
      if (!values_equal((*a.list)[i], (*b.list)[i])) return order((*a.list)[i], (*b.list)[i], op);
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size();
  }
  require_defined(a);
  require_defined(b);
  throw Error("'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

// Python's index normalization for one subscript: negative counts from the end; -1 when out of range.
int64_t normalize_index(int64_t index, int64_t size) {
  if (index < 0) index += size;
  return index < 0 || index >= size ? -1 : index;
}

}  // namespace

void require_defined(const Value& value) {
  if (value.is_undefined())
    throw Error(value.string.empty() ? std::string("undefined value") : "'" + value.string + "' is undefined");
}

Value binary_operation(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::from_string(to_python_string(a) + to_python_string(b));
  require_defined(a);
  require_defined(b);
  if (op == "+") {
    if (is_integral(a) && is_integral(b)) return checked(add, integral(a), integral(b));
    if (a.is_number() && b.is_number()) return Value::from_float(a.as_double() + b.as_double());
    if (a.kind == ValueKind::string && b.kind == ValueKind::string) {
      if (a.is_markup == b.is_markup) {
        Value out = Value::from_string(a.string + b.string);
        out.is_markup = a.is_markup;
        return out;
      }
      Value out = Value::from_string((a.is_markup ? a.string : html_escape(a.string)) + (b.is_markup ? b.string : html_escape(b.string)));
      out.is_markup = true;
      return out;
    }
    if (a.kind == ValueKind::list && b.kind == ValueKind::list && a.is_tuple == b.is_tuple) {
      std::vector<Value> items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      return Value::from_list(std::move(items), a.is_tuple);
    }
    type_error(op, a, b);
  }
  if (op == "*") {
    if (is_integral(a) && is_integral(b)) return checked(multiply, integral(a), integral(b));
    if (a.is_number() && b.is_number()) return Value::from_float(a.as_double() * b.as_double());
    if ((a.kind == ValueKind::string || a.kind == ValueKind::list) && is_integral(b)) return repeat(a, integral(b));
    if ((b.kind == ValueKind::string || b.kind == ValueKind::list) && is_integral(a)) return repeat(b, integral(a));
    type_error(op, a, b);
  }
  if (!a.is_number() || !b.is_number()) {
    if (op == "%" && a.kind == ValueKind::string)
      throw Error("printf-style string formatting ('...' % values) is not supported by nucleus's Jinja interpreter");
    type_error(op, a, b);
  }
  const bool integers = is_integral(a) && is_integral(b);
  if (op == "-") return integers ? checked(subtract, integral(a), integral(b)) : Value::from_float(a.as_double() - b.as_double());
  if (op == "/") {
    if (b.as_double() == 0.0) throw Error("division by zero");
    return Value::from_float(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0.0) throw Error(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
    if (integers) {
      if (integral(b) == -1) return op == "%" ? Value::from_int(0) : checked(subtract, 0, integral(a));  // INT64_MIN // -1
      return Value::from_int(op == "//" ? floor_divide(integral(a), integral(b)) : floor_modulo(integral(a), integral(b)));
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "//") return Value::from_float(std::floor(x / y));
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::from_float(r);
  }
  if (op == "**") {
    if (integers && integral(b) >= 0) {
      // Square and multiply; Python's ints are unbounded, ours stop at 64 bits.
      int64_t result = 1, base = integral(a), exponent = integral(b);
      while (exponent > 0) {
        if ((exponent & 1) && __builtin_mul_overflow(result, base, &result)) throw Error("integer power too large");
        exponent >>= 1;
        if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) throw Error("integer power too large");
      }
      return Value::from_int(result);
    }
    return Value::from_float(std::pow(a.as_double(), b.as_double()));
  }
  throw Error("unknown operator '" + op + "'");
}

Value negate(const Value& value) {
  require_defined(value);
  if (is_integral(value)) return checked(subtract, 0, integral(value));
  if (value.kind == ValueKind::floating) return Value::from_float(-value.floating);
  throw Error(std::string("bad operand type for unary -: '") + type_name(value) + "'");
}

bool compare_values(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return values_equal(a, b);
  if (op == "!=") return !values_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  const int c = order(a, b, op);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;  // >=
}

bool contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind) {
    case ValueKind::undefined: return false;  // Undefined iterates as empty
    case ValueKind::string:
      if (needle.kind != ValueKind::string)
        throw Error(std::string("'in <string>' requires string as left operand, not ") + type_name(needle));
      return haystack.string.find(needle.string) != std::string::npos;
    case ValueKind::iterator:
      for (const Value& item : iterate(haystack))
        if (values_equal(item, needle)) return true;
      return false;
    case ValueKind::list:
      for (const Value& item : *haystack.list)
        if (values_equal(item, needle)) return true;
      return false;
    case ValueKind::dict: return haystack.dict->find(needle) != nullptr;
    default: throw Error(std::string("argument of type '") + type_name(haystack) + "' is not iterable");
  }
}

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) {
    require_defined(object);
  }
  if (object.kind == ValueKind::namespace_object) {
    const Value* found = object.dict->find(name);
    return found ? *found : Value::undefined(name);
  }
  Value method = find_method(object, name);
  if (!method.is_undefined()) return method;
  if (object.kind == ValueKind::dict) {
    const Value* found = object.dict->find(name);
    if (found) return *found;
  }
  return Value::undefined(name);
}

Value get_item(const Value& object, const Value& key) {
  require_defined(object);
  switch (object.kind) {
    case ValueKind::dict: {
      const Value* found = object.dict->find(key);
      if (found) return *found;
      break;
    }
    case ValueKind::list:
      if (is_integral(key)) {
        const int64_t i = normalize_index(integral(key), static_cast<int64_t>(object.list->size()));
        if (i >= 0) return (*object.list)[static_cast<size_t>(i)];
        return Value::undefined();
      }
      break;
    case ValueKind::string:
      if (is_integral(key)) {
        const std::vector<std::string> characters = utf8_characters(object.string);
        const int64_t i = normalize_index(integral(key), static_cast<int64_t>(characters.size()));
        if (i >= 0) return Value::from_string(characters[static_cast<size_t>(i)]);
        return Value::undefined();
      }
      break;
    case ValueKind::namespace_object:
      throw Error("'Namespace' object is not subscriptable");
    default: break;
  }
  if (key.kind == ValueKind::string) return get_attribute(object, key.string);
  return Value::undefined();
}

Value slice_value(const Value& object, const Value& start_value, const Value& stop_value, const Value& step_value) {
  require_defined(object);
  auto bound = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!is_integral(v)) throw Error(std::string("slice ") + what + " must be an integer or None");
    return integral(v);
  };
  const int64_t step = bound(step_value, "step").value_or(1);
  if (step == 0) throw Error("slice step cannot be zero");
  std::vector<std::string> characters;
  int64_t size = 0;
  if (object.kind == ValueKind::string) {
    characters = utf8_characters(object.string);
    size = static_cast<int64_t>(characters.size());
  } else if (object.kind == ValueKind::list) {
    size = static_cast<int64_t>(object.list->size());
  } else {
    throw Error(std::string("'") + type_name(object) + "' object is not subscriptable");
  }
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t default_value) {
    if (!v) return default_value;
    int64_t x = *v;
    if (x < 0) x += size;
    if (step > 0) return std::clamp<int64_t>(x, 0, size);
    return std::clamp<int64_t>(x, -1, size - 1);
  };
  const int64_t start = clamp(bound(start_value, "start"), step > 0 ? 0 : size - 1);
  const int64_t stop = clamp(bound(stop_value, "stop"), step > 0 ? size : -1);
  std::vector<Value> items;
  std::string text;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (object.kind == ValueKind::string) {
      text += characters[static_cast<size_t>(i)];
    } else {
      items.push_back((*object.list)[static_cast<size_t>(i)]);
    }
  }
  if (object.kind == ValueKind::string) return Value::from_string(std::move(text));
  return Value::from_list(std::move(items), object.is_tuple);
}

void for_each_utf8_character(const std::string& text, const std::function<void(size_t, size_t)>& f) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t begin = pos;
    uint32_t codepoint = 0;
    unicode::next_codepoint(text, pos, codepoint);
    f(begin, pos - begin);
  }
}

std::vector<std::string> utf8_characters(const std::string& text) {
  std::vector<std::string> out;
  for_each_utf8_character(text, [&](size_t begin, size_t length) { out.push_back(text.substr(begin, length)); });
  return out;
}

std::vector<Value> iterate(const Value& value) {
  switch (value.kind) {
    case ValueKind::undefined: return {};
    case ValueKind::list: return *value.list;
    case ValueKind::iterator: {
      if (*value.consumed) return {};
      *value.consumed = true;
      return *value.list;
    }
    case ValueKind::dict: {
      std::vector<Value> keys;
      for (const auto& entry : value.dict->entries()) keys.push_back(entry.first);
      return keys;
    }
    case ValueKind::string: {
      // One Value per character: a 16 MiB string would be 16 million of them (GBs, and the fuzzer's
      // chained joins spent 28 s building them), so longer strings are not iterated.
      if (value.string.size() > kMaxIteratedStringBytes)
        throw Error("string too large to iterate (over " + std::to_string(kMaxIteratedStringBytes >> 20) + " MiB)");
      std::vector<Value> out;
      for (std::string& c : utf8_characters(value.string)) out.push_back(Value::from_string(std::move(c)));
      return out;
    }
    default: throw Error(std::string("'") + type_name(value) + "' object is not iterable");
  }
}

int64_t length_of(const Value& value) {
  switch (value.kind) {
    case ValueKind::undefined: return 0;
    case ValueKind::string: return static_cast<int64_t>(utf8_characters(value.string).size());
    case ValueKind::list: return static_cast<int64_t>(value.list->size());
    case ValueKind::dict: return static_cast<int64_t>(value.dict->size());
    default: throw Error(std::string("object of type '") + type_name(value) + "' has no len()");
  }
}

}  // namespace nucleus::jinja
