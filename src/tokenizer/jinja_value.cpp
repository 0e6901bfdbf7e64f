// Python semantics of template values: truthiness, equality, str() and repr().
#include "tokenizer/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace nucleus::jinja {

void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes) throw Error("string result too large (over " + std::to_string(kMaxStringBytes >> 20) + " MiB)");
}

Value Value::from_list(std::vector<Value> items, bool tuple) {
  Value v = of_kind(ValueKind::list);
  v.list = std::make_shared<std::vector<Value>>(std::move(items));
  v.is_tuple = tuple;
  return v;
}

Value Value::from_iterator(std::vector<Value> items) {
  Value v = of_kind(ValueKind::iterator);
  v.list = std::make_shared<std::vector<Value>>(std::move(items));
  v.consumed = std::make_shared<bool>(false);
  return v;
}

Value Value::from_dict(Dict dict) {
  Value v = of_kind(ValueKind::dict);
  v.dict = std::make_shared<Dict>(std::move(dict));
  return v;
}

Value Value::new_namespace() {
  Value v = of_kind(ValueKind::namespace_object);
  v.dict = std::make_shared<Dict>();
  return v;
}

Value Value::from_function(std::string name, std::function<Value(CallArguments&)> function) {
  Value v = of_kind(ValueKind::callable);
  v.callable = std::make_shared<Callable>(Callable{std::move(name), std::move(function)});
  return v;
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries_)
    if (values_equal(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k.kind == ValueKind::string && k.string == key) return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : entries_) {
    if (values_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

bool is_truthy(const Value& value) {
  switch (value.kind) {
    case ValueKind::undefined:
    case ValueKind::none: return false;
    case ValueKind::boolean: return value.boolean;
    case ValueKind::integer: return value.integer != 0;
    case ValueKind::floating: return value.floating != 0.0;
    case ValueKind::string: return !value.string.empty();
    case ValueKind::list: return !value.list->empty();
    case ValueKind::dict: return value.dict->size() > 0;
    case ValueKind::namespace_object:
    case ValueKind::callable:
    case ValueKind::iterator: return true;
  }
  return false;
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == ValueKind::floating || b.kind == ValueKind::floating) return a.as_double() == b.as_double();
    return (a.kind == ValueKind::boolean ? a.boolean : a.integer) == (b.kind == ValueKind::boolean ? b.boolean : b.integer);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ValueKind::undefined:
    case ValueKind::none: return true;
    case ValueKind::string: return a.string == b.string;
    case ValueKind::list: {
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!values_equal((*a.list)[i], (*b.list)[i])) return false;
      return true;
    }
    case ValueKind::dict: {
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [key, value] : a.dict->entries()) {
        const Value* other = b.dict->find(key);
        if (!other || !values_equal(value, *other)) return false;
      }
      return true;
    }
    case ValueKind::namespace_object: return a.dict == b.dict;
    case ValueKind::callable: return a.callable == b.callable;
    case ValueKind::iterator: return a.list == b.list;
    default: return false;
  }
}

const char* type_name(const Value& value) {
  switch (value.kind) {
    case ValueKind::undefined: return "Undefined";
    case ValueKind::none: return "NoneType";
    case ValueKind::boolean: return "bool";
    case ValueKind::integer: return "int";
    case ValueKind::floating: return "float";
    case ValueKind::string: return "str";
    case ValueKind::list: return value.is_tuple ? "tuple" : "list";
    case ValueKind::dict: return "dict";
    case ValueKind::namespace_object: return "Namespace";
    case ValueKind::callable: return "function";
    case ValueKind::iterator: return "generator";
  }
  return "object";
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest digits that round-trip (what Python's repr picks), then Python's layout: positional
  // for exponents in [-4, 16), else d.ddde±XX.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string scientific(buffer, result.ptr);
  const size_t e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  const int exponent = std::atoi(scientific.c_str() + e + 1);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exponent_text[16];
    std::snprintf(exponent_text, sizeof exponent_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exponent_text;
  }
  return negative ? "-" + out : out;
}

namespace {

// Python's repr of a str: single quotes unless the text has a single quote and no double quote;
// backslash escapes for the quote, backslash and control characters; other characters as they are
// (printable non-ASCII stays, as Python 3 keeps it).
std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      out += escape;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string to_python_repr(const Value& value) {
  switch (value.kind) {
    case ValueKind::string: return string_repr(value.string);
    case ValueKind::list: {
      std::string out = value.is_tuple ? "(" : "[";
      for (size_t i = 0; i < value.list->size(); ++i) out += (i ? ", " : "") + to_python_repr((*value.list)[i]);
      if (value.is_tuple && value.list->size() == 1) out += ",";
      return out + (value.is_tuple ? ")" : "]");
    }
    case ValueKind::dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : value.dict->entries()) {
        out += (first ? "" : ", ") + to_python_repr(key) + ": " + to_python_repr(item);
        first = false;
      }
      return out + "}";
    }
    case ValueKind::undefined: return "Undefined";
    default: return to_python_string(value);
  }
}

std::string to_python_string(const Value& value) {
  switch (value.kind) {
    case ValueKind::undefined: return "";
    case ValueKind::none: return "None";
    case ValueKind::boolean: return value.boolean ? "True" : "False";
    case ValueKind::integer: return std::to_string(value.integer);
    case ValueKind::floating: return python_float_repr(value.floating);
    case ValueKind::string: return value.string;
    case ValueKind::list:
    case ValueKind::dict: return to_python_repr(value);
    case ValueKind::namespace_object: return "<Namespace>";
    case ValueKind::callable: return "<function " + value.callable->name + ">";
    case ValueKind::iterator:
      // jinja2 prints "<generator object ... at 0x...>": an address no renderer can reproduce.
      throw Error("printing a generator (a map/select/... filter result without |list) is not supported");
  }
  return "";
}

namespace {

template <typename Json>
Value convert(const Json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::from_bool(json.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::from_int(json.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return Value::from_int(static_cast<int64_t>(json.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float: return Value::from_float(json.template get<double>());
    case nlohmann::json::value_t::string: return Value::from_string(json.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const Json& item : json) items.push_back(convert(item));
      return Value::from_list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict dict;
      for (auto it = json.begin(); it != json.end(); ++it) dict.set(Value::from_string(it.key()), convert(it.value()));
      return Value::from_dict(std::move(dict));
    }
    default: return Value::none();
  }
}

}  // namespace

Value value_from_json(const nlohmann::json& json) { return convert(json); }
Value value_from_json(const nlohmann::ordered_json& json) { return convert(json); }

}  // namespace nucleus::jinja
