// jinja2's filters and tests and the Python str / dict / list methods templates call, on template
// values. Names that are not here are refused when a template is parsed (jinja2 refuses unknown
// filters and tests at compile time too), so a template never renders with one silently skipped.
#pragma once
#include <string>
#include <string_view>

#include "tokenizer/jinja_value.h"

namespace nucleus::jinja {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

// value | name(arguments). Throws Error for bad arguments, as jinja2 raises.
Value apply_filter(const std::string& name, const Value& value, CallArguments& arguments);
// value is name(arguments).
bool apply_test(const std::string& name, const Value& value, CallArguments& arguments);

// The bound method object.name, or nullopt-like Undefined when the type has no such method. Methods
// that mutate (list.append, dict.update, ...) raise when called: Hugging Face renders templates in
// jinja2's ImmutableSandboxedEnvironment, which forbids them.
Value find_method(const Value& object, const std::string& name);

// Python's str.strip/lstrip/rstrip: `characters` null strips Unicode whitespace.
std::string python_strip(const std::string& text, const std::string* characters, bool left, bool right);

// Python's json.dumps(value, ensure_ascii=False, indent=indent, separators=(item, key), sort_keys):
// what Hugging Face's tojson filter runs. indent < 0: none (one line). Throws for values JSON cannot
// hold (Undefined, functions, namespaces), as json.dumps raises.
struct JsonFormat {
  int indent = -1;
  std::string indent_text;  // when set (a string indent), used instead of `indent` spaces
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
std::string to_json_text(const Value& value, const JsonFormat& format);

// The keyword or the positional argument at `index` (null when neither was given).
const Value* argument(const CallArguments& arguments, size_t index, std::string_view keyword);

}  // namespace nucleus::jinja
