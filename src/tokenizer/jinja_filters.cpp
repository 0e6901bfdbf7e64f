// jinja2's filters (value | name(arguments)), with Hugging Face's tojson in place of jinja2's.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_operations.h"

namespace nucleus::jinja {

namespace {

// jinja2 3.1's filter names (a template naming another fails to compile there, and here).
constexpr std::string_view kJinjaFilters[] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum",
    "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap",
    "xmlattr",
};

std::string ascii_case(std::string text, bool upper) {
  for (char& c : text) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool boolean_argument(const CallArguments& args, size_t index, std::string_view keyword, bool default_value) {
  const Value* v = argument(args, index, keyword);
  return v ? is_truthy(*v) : default_value;
}

// A dotted attribute path ("function.name" or "0") as jinja2's make_attrgetter walks it.
Value attribute_path(const Value& item, const Value& path) {
  if (path.kind == ValueKind::integer) return get_item(item, path);
  Value current = item;
  const std::string& text = path.string;
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    const std::string part = text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); });
    current = get_item(current, numeric ? Value::from_int(std::stoll(part)) : Value::from_string(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

// The sort key jinja2 uses: strings lower-cased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.kind == ValueKind::string) return Value::from_string(ascii_case(v.string, false));
  return v;
}

void sort_values(std::vector<Value>& items, const std::function<Value(const Value&)>& key, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) keyed.emplace_back(key(item), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? compare_values("<", b.first, a.first) : compare_values("<", a.first, b.first);
  });
  items.clear();
  for (auto& [k, v] : keyed) items.push_back(std::move(v));
}

// select / reject / selectattr / rejectattr: keep items whose test (or truthiness) is `keep`.
Value select_items(const Value& sequence, CallArguments& args, bool by_attribute, bool keep) {
  if (!is_truthy(sequence)) return Value::from_iterator({});  // jinja2: `if value:` before walking it
  size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) throw Error("selectattr/rejectattr need an attribute name");
    attribute = args.positional[next++];
  }
  std::string test;
  CallArguments test_args;
  if (next < args.positional.size()) {
    test = to_python_string(args.positional[next++]);
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
    test_args.keyword = args.keyword;
    if (!is_known_test(test)) throw Error("no test named '" + test + "'");
  }
  std::vector<Value> out;
  for (const Value& item : iterate(sequence)) {
    const Value subject = by_attribute ? attribute_path(item, attribute) : item;
    const bool passed = test.empty() ? is_truthy(subject) : apply_test(test, subject, test_args);
    if (passed == keep) out.push_back(item);
  }
  return Value::from_iterator(std::move(out));
}

Value map_items(const Value& sequence, CallArguments& args) {
  if (!is_truthy(sequence)) return Value::from_iterator({});  // jinja2: `if value:` before walking it
  std::vector<Value> out;
  if (const Value* attribute = argument(args, 99, "attribute")) {
    const Value* default_value = argument(args, 99, "default");
    for (const Value& item : iterate(sequence)) {
      Value v = attribute_path(item, *attribute);
      if (v.is_undefined() && default_value) v = *default_value;
      out.push_back(std::move(v));
    }
    return Value::from_iterator(std::move(out));
  }
  if (args.positional.empty()) throw Error("map needs a filter name or attribute=");
  const std::string filter = to_python_string(args.positional[0]);
  if (!is_known_filter(filter)) throw Error("no filter named '" + filter + "'");
  CallArguments filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : iterate(sequence)) {
    CallArguments copy = filter_args;
    out.push_back(apply_filter(filter, item, copy));
  }
  return Value::from_iterator(std::move(out));
}

// jinja2's indent: lines after the first (and the first with first=True) get the indentation; blank
// lines stay blank unless blank=True.
std::string indent_text(const std::string& text, const std::string& indentation, bool first, bool blank) {
  std::vector<std::string> lines;
  const std::string s = text + "\n";  // jinja2 appends one, so a trailing newline keeps a last empty line
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string out;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + indentation : "") + lines[i];
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) out += "\n" + (lines[i].empty() ? "" : indentation + lines[i]);
  }
  return first ? indentation + out : out;
}

// jinja2's title filter: words start after runs of '-', whitespace, '(', '{', '[' or '<'.
std::string jinja_title(const std::string& text) {
  std::string out = text;
  bool word_start = true;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '-' || std::isspace(u) || c == '(' || c == '{' || c == '[' || c == '<') {
      word_start = true;
      continue;
    }
    c = static_cast<char>(word_start ? std::toupper(u) : std::tolower(u));
    word_start = false;
  }
  return out;
}

// A float that truncates to a 64-bit int (others would be undefined behaviour to convert).
bool in_int64_range(double f) { return std::isfinite(f) && f > -9.2e18 && f < 9.2e18; }

Value to_int(const Value& value, const CallArguments& args) {
  const Value* default_value = argument(args, 0, "default");
  const Value fallback = default_value ? *default_value : Value::from_int(0);
  switch (value.kind) {
    case ValueKind::integer: return value;
    case ValueKind::boolean: return Value::from_int(value.boolean);
    case ValueKind::floating: return in_int64_range(value.floating) ? Value::from_int(static_cast<int64_t>(value.floating)) : fallback;
    case ValueKind::string: {
      const std::string text = python_strip(value.string, nullptr, true, true);
      char* end = nullptr;
      const long long i = std::strtoll(text.c_str(), &end, 10);
      if (!text.empty() && end == text.c_str() + text.size()) return Value::from_int(i);
      const double f = std::strtod(text.c_str(), &end);
      if (!text.empty() && end == text.c_str() + text.size() && in_int64_range(f)) return Value::from_int(static_cast<int64_t>(f));
      return fallback;
    }
    default: return fallback;
  }
}

Value to_float(const Value& value, const CallArguments& args) {
  const Value* default_value = argument(args, 0, "default");
  const Value fallback = default_value ? *default_value : Value::from_float(0.0);
  if (value.is_number()) return Value::from_float(value.as_double());
  if (value.kind == ValueKind::string) {
    const std::string text = python_strip(value.string, nullptr, true, true);
    char* end = nullptr;
    const double f = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return Value::from_float(f);
  }
  return fallback;
}

Value tojson(const Value& value, const CallArguments& args) {
  // Hugging Face's signature: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  JsonFormat format;
  format.ensure_ascii = boolean_argument(args, 0, "ensure_ascii", false);
  const Value* indent = argument(args, 1, "indent");
  if (indent && !indent->is_none()) {
    if (indent->kind == ValueKind::string) {
      format.indent_text = indent->string;
      format.indent = 0;
    } else if (indent->kind == ValueKind::integer) {
      format.indent = static_cast<int>(std::max<int64_t>(indent->integer, 0));
    } else {
      throw Error("tojson indent must be an integer or a string");
    }
    format.item_separator = ",";
  }
  const Value* separators = argument(args, 2, "separators");
  if (separators && !separators->is_none()) {
    if (separators->kind != ValueKind::list || separators->list->size() != 2 || (*separators->list)[0].kind != ValueKind::string ||
        (*separators->list)[1].kind != ValueKind::string)
      throw Error("tojson separators must be a pair of strings");
    format.item_separator = (*separators->list)[0].string;
    format.key_separator = (*separators->list)[1].string;
  }
  format.sort_keys = boolean_argument(args, 3, "sort_keys", false);
  return Value::from_string(to_json_text(value, format));
}

Value min_max(const Value& value, const CallArguments& args, bool want_max) {
  const bool case_sensitive = boolean_argument(args, 0, "case_sensitive", false);
  const Value* attribute = argument(args, 1, "attribute");
  std::vector<Value> items = iterate(value);
  if (items.empty()) return Value::undefined("min/max of an empty sequence");
  size_t best = 0;
  auto key = [&](const Value& v) { return sort_key(attribute ? attribute_path(v, *attribute) : v, case_sensitive); };
  for (size_t i = 1; i < items.size(); ++i)
    if (compare_values(want_max ? ">" : "<", key(items[i]), key(items[best]))) best = i;
  return items[best];
}

}  // namespace

const Value* argument(const CallArguments& arguments, size_t index, std::string_view keyword) {
  for (const auto& [key, value] : arguments.keyword)
    if (key == keyword) return &value;
  return index < arguments.positional.size() ? &arguments.positional[index] : nullptr;
}

bool is_known_filter(std::string_view name) {
  for (std::string_view known : kJinjaFilters)
    if (known == name) return true;
  return false;
}

Value apply_filter(const std::string& name, const Value& value, CallArguments& args) {
  if (name == "default" || name == "d") {
    const Value* fallback = argument(args, 0, "default_value");
    const bool boolean = boolean_argument(args, 1, "boolean", false);
    if (value.is_undefined() || (boolean && !is_truthy(value))) return fallback ? *fallback : Value::from_string("");
    return value;
  }
  if (name == "safe") {
    Value out = Value::from_string(to_python_string(value));
    out.is_markup = true;
    return out;
  }
  if (name == "string") {
    if (value.kind == ValueKind::string) return value;
    return Value::from_string(to_python_string(value));
  }
  if (name == "length" || name == "count") return Value::from_int(length_of(value));
  if (name == "tojson") return tojson(value, args);
  if (name == "items") {
    if (value.is_undefined()) return Value::from_iterator({});
    if (value.kind != ValueKind::dict) throw Error("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, v] : value.dict->entries()) out.push_back(Value::from_list({k, v}, true));
    return Value::from_iterator(std::move(out));
  }
  if (name == "list") return Value::from_list(iterate(value));
  if (name == "first" || name == "last") {
    if (name == "last" && value.kind == ValueKind::iterator) throw Error("'generator' object is not reversible");
    std::vector<Value> items = iterate(value);
    if (items.empty()) return Value::undefined(name == "first" ? "first of an empty sequence" : "last of an empty sequence");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    const Value* separator = argument(args, 0, "d");
    const Value* attribute = argument(args, 1, "attribute");
    std::string out;
    bool first = true;
    if (value.kind == ValueKind::string && !attribute) {
      // A string's characters, walked in place: no Value (or string) per character, so the work is
      // bounded by the output limit — chained joins on ~1 MB strings built millions of Values and
      // timed out under the fuzzer (fuzz/corpus/jinja_template/regression-chained-joins-of-strings).
      const std::string sep = separator ? to_python_string(*separator) : std::string();
      for_each_utf8_character(value.string, [&](size_t begin, size_t length) {
        if (!first) out += sep;
        out.append(value.string, begin, length);
        check_string_size(out.size());
        first = false;
      });
      return Value::from_string(out);
    }
    for (const Value& item : iterate(value)) {
      if (!first && separator) out += to_python_string(*separator);
      out += to_python_string(attribute ? attribute_path(item, *attribute) : item);
      check_string_size(out.size());
      first = false;
    }
    return Value::from_string(out);
  }
  if (name == "selectattr" || name == "rejectattr") return select_items(value, args, true, name == "selectattr");
  if (name == "select" || name == "reject") return select_items(value, args, false, name == "select");
  if (name == "map") return map_items(value, args);
  if (name == "attr") {
    const Value* attribute = argument(args, 0, "name");
    if (!attribute) throw Error("attr needs a name");
    return get_attribute(value, to_python_string(*attribute));
  }
  if (name == "unique") {
    const bool case_sensitive = boolean_argument(args, 0, "case_sensitive", false);
    const Value* attribute = argument(args, 1, "attribute");
    std::vector<Value> out, seen;
    for (const Value& item : iterate(value)) {
      const Value key = sort_key(attribute ? attribute_path(item, *attribute) : item, case_sensitive);
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::from_iterator(std::move(out));
  }
  if (name == "sort") {
    const bool reverse = boolean_argument(args, 0, "reverse", false);
    const bool case_sensitive = boolean_argument(args, 1, "case_sensitive", false);
    const Value* attribute = argument(args, 2, "attribute");
    std::vector<Value> items = iterate(value);
    sort_values(items, [&](const Value& v) { return sort_key(attribute ? attribute_path(v, *attribute) : v, case_sensitive); }, reverse);
    return Value::from_list(std::move(items));
  }
  if (name == "dictsort") {
    if (value.kind != ValueKind::dict) throw Error("dictsort needs a mapping");
    const bool case_sensitive = boolean_argument(args, 0, "case_sensitive", false);
    const Value* by = argument(args, 1, "by");
    const bool by_value = by && to_python_string(*by) == "value";
    const bool reverse = boolean_argument(args, 2, "reverse", false);
    std::vector<Value> items;
    for (const auto& [k, v] : value.dict->entries()) items.push_back(Value::from_list({k, v}, true));
    sort_values(items, [&](const Value& pair) { return sort_key((*pair.list)[by_value ? 1 : 0], case_sensitive); }, reverse);
    return Value::from_list(std::move(items));
  }
  if (name == "reverse") {
    if (value.kind == ValueKind::string) {
      std::vector<std::string> characters = utf8_characters(value.string);
      std::string out;
      for (auto it = characters.rbegin(); it != characters.rend(); ++it) out += *it;
      return Value::from_string(out);
    }
    const bool reversible = value.kind == ValueKind::list || value.kind == ValueKind::dict;  // Python's reversed() gives an iterator
    std::vector<Value> items = iterate(value);
    std::reverse(items.begin(), items.end());
    return reversible ? Value::from_iterator(std::move(items)) : Value::from_list(std::move(items));
  }
  if (name == "min" || name == "max") return min_max(value, args, name == "max");
  if (name == "sum") {
    const Value* attribute = argument(args, 0, "attribute");
    const Value* start = argument(args, 1, "start");
    Value total = start ? *start : Value::from_int(0);
    for (const Value& item : iterate(value)) total = binary_operation("+", total, attribute ? attribute_path(item, *attribute) : item);
    return total;
  }
  if (name == "int") return to_int(value, args);
  if (name == "float") return to_float(value, args);
  if (name == "abs") {
    if (value.kind == ValueKind::integer) return value.integer >= 0 ? value : negate(value);
    if (value.kind == ValueKind::boolean) return Value::from_int(value.boolean);
    if (value.kind == ValueKind::floating) return Value::from_float(std::fabs(value.floating));
    throw Error(std::string("bad operand type for abs(): '") + type_name(value) + "'");
  }
  if (name == "round") {
    const Value* precision_value = argument(args, 0, "precision");
    const int64_t precision = precision_value ? precision_value->integer : 0;
    const Value* method_value = argument(args, 1, "method");
    const std::string method = method_value ? to_python_string(*method_value) : "common";
    if (!value.is_number()) throw Error("round needs a number");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = value.as_double() * scale;
    double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
    return Value::from_float(r / scale);
  }
  // The string filters work on str(value), as jinja2's soft_str does.
  const std::string text = to_python_string(value);
  if (name == "trim") {
    const Value* characters = argument(args, 0, "chars");
    const std::string* chars = characters && !characters->is_none() ? &characters->string : nullptr;
    return Value::from_string(python_strip(text, chars, true, true));
  }
  if (name == "upper" || name == "lower") return Value::from_string(ascii_case(text, name == "upper"));
  if (name == "capitalize") {
    std::string out = ascii_case(text, false);
    if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return Value::from_string(out);
  }
  if (name == "title") return Value::from_string(jinja_title(text));
  if (name == "replace") {
    CallArguments method_args;
    method_args.positional = args.positional;
    if (const Value* count = argument(args, 2, "count")) {
      method_args.positional.resize(2);
      method_args.positional.push_back(*count);
    }
    Value method = find_method(Value::from_string(text), "replace");
    return method.callable->function(method_args);
  }
  if (name == "indent") {
    const Value* width = argument(args, 0, "width");
    const std::string indentation = width && width->kind == ValueKind::string ? width->string
                                    : std::string(static_cast<size_t>(width ? std::max<int64_t>(width->integer, 0) : 4), ' ');
    return Value::from_string(indent_text(text, indentation, boolean_argument(args, 1, "first", false), boolean_argument(args, 2, "blank", false)));
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : text) {
      const bool word = std::isalnum(c) || c == '_' || c >= 0x80;
      if (word && !in_word) ++n;
      in_word = word;
    }
    return Value::from_int(n);
  }
  if (name == "escape" || name == "e" || name == "forceescape") {
    if (value.is_markup && name != "forceescape") return value;
    Value escaped = binary_operation("+", [] {
      Value empty = Value::from_string("");
      empty.is_markup = true;
      return empty;
    }(), Value::from_string(text));
    return escaped;
  }
  throw Error("the filter '" + name + "' is not supported by nucleus's Jinja interpreter");
}

}  // namespace nucleus::jinja
