// The values a Jinja chat template computes with, with Python's semantics (what jinja2 runs on):
// None, booleans, ints, floats, strings, lists (and tuples), insertion-ordered dicts, namespaces and
// callables (macros, globals, bound methods), plus jinja2's Undefined.
//
// Lists, dicts and namespaces are shared by reference, as Python objects are: `set ns.x = 1` inside a
// loop is seen after it. Templates run in Hugging Face's immutable sandbox, so no template can mutate
// a list or a dict in place (list.append and dict.update raise there, and here); only namespaces
// change, which is why sharing is safe.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace nucleus::jinja {

// iterator: what jinja2's map/select/reject/selectattr/rejectattr/unique/items filters and reversed
// lists return — a Python generator: always true, no len(), not printable or JSON, and empty once it
// has been walked (templates that forget |list fail under jinja2, and here).
enum class ValueKind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, namespace_object, callable, iterator };

struct Value;
class Dict;
struct CallArguments;

// A callable: a macro, a global function (range, namespace, raise_exception, ...) or a bound method
// ('a,b'.split). `name` is what error messages call it.
struct Callable {
  std::string name;
  std::function<Value(CallArguments&)> function;
};

// Python would build a string of any size; a chat template has no business making one over
// kMaxStringBytes (16 MiB), and a few nested joins or repetitions can ask for gigabytes. Throws
// Error("string result too large") past it.
inline constexpr size_t kMaxStringBytes = size_t{1} << 24;
// Iterating a string (for c in s, join, list, ...) makes a Value per character: strings longer than
// this are not iterated (an Error), which bounds the memory and time of chained joins.
inline constexpr size_t kMaxIteratedStringBytes = size_t{1} << 20;
void check_string_size(size_t bytes);

struct Value {
  ValueKind kind = ValueKind::undefined;
  bool boolean = false;
  bool is_tuple = false;   // list: a Python tuple (prints as "(a, b)")
  bool is_markup = false;  // string: a jinja2 Markup (from |safe): `+` with it HTML-escapes the other side
  int64_t integer = 0;
  double floating = 0.0;
  // string: its UTF-8 bytes; undefined: the name that was looked up, for error messages.
  std::string string;
  std::shared_ptr<std::vector<Value>> list;  // list and iterator items
  std::shared_ptr<bool> consumed;             // iterator: walked already (shared by copies, as one generator)
  std::shared_ptr<Dict> dict;  // dict and namespace_object
  std::shared_ptr<Callable> callable;

  static Value undefined(std::string name = "") {
    Value v;
    v.string = std::move(name);
    return v;
  }
  static Value none() { return of_kind(ValueKind::none); }
  static Value from_bool(bool b) {
    Value v = of_kind(ValueKind::boolean);
    v.boolean = b;
    return v;
  }
  static Value from_int(int64_t i) {
    Value v = of_kind(ValueKind::integer);
    v.integer = i;
    return v;
  }
  static Value from_float(double f) {
    Value v = of_kind(ValueKind::floating);
    v.floating = f;
    return v;
  }
  static Value from_string(std::string s) {
    check_string_size(s.size());
    Value v = of_kind(ValueKind::string);
    v.string = std::move(s);
    return v;
  }
  static Value from_list(std::vector<Value> items, bool tuple = false);
  static Value from_dict(Dict dict);
  static Value from_iterator(std::vector<Value> items);
  static Value new_namespace();
  static Value from_function(std::string name, std::function<Value(CallArguments&)> function);

  bool is_undefined() const { return kind == ValueKind::undefined; }
  bool is_none() const { return kind == ValueKind::none; }
  bool is_string() const { return kind == ValueKind::string; }
  bool is_list() const { return kind == ValueKind::list; }
  bool is_dict() const { return kind == ValueKind::dict; }
  bool is_number() const { return kind == ValueKind::integer || kind == ValueKind::floating || kind == ValueKind::boolean; }
  double as_double() const { return kind == ValueKind::floating ? floating : static_cast<double>(kind == ValueKind::boolean ? boolean : integer); }

 private:
  static Value of_kind(ValueKind k) {
    Value v;
    v.kind = k;
    return v;
  }
};

// A Python dict: keys keep their insertion order (what `items()`, loops and tojson follow). Lookup is
// linear; chat-template dicts have a handful of keys.
class Dict {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts, or replaces the value of an equal key in place (its position stays, as in Python).
  void set(Value key, Value value);
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<Value, Value>> entries_;
};

// Positional and keyword arguments of one call, in call order.
struct CallArguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Python truthiness; Undefined is false.
bool is_truthy(const Value& value);
// Python ==: 1 == 1.0 == True, lists and dicts element-wise; Undefined equals only Undefined.
bool values_equal(const Value& a, const Value& b);
// The Python type name in error messages ("str", "int", "list", "dict", "NoneType", "Undefined", ...).
const char* type_name(const Value& value);
// Python's str(value) as jinja2 prints it: "None", "True", "1.5", "['a', 1]", "{'k': None}"; Undefined
// prints as "".
std::string to_python_string(const Value& value);
// Python's repr(value): strings quoted as Python quotes them ('it''s' → "it's").
std::string to_python_repr(const Value& value);
// Python's repr of a float ("1.0", "0.1", "1e+16", "inf").
std::string python_float_repr(double value);

// Request JSON (messages, tools, kwargs) as template values: objects keep their key order only when
// the json type does (nlohmann::ordered_json); numbers stay ints or floats as written.
Value value_from_json(const nlohmann::json& json);
Value value_from_json(const nlohmann::ordered_json& json);

}  // namespace nucleus::jinja
