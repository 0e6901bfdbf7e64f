// Python's operators on template values, as jinja2 evaluates them: arithmetic, comparison,
// membership, attribute and item lookup (with jinja2's fallbacks), slicing and iteration. Anything
// Python would raise a TypeError for raises an Error here, so a template that fails under jinja2
// fails here too instead of printing something.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace nucleus::jinja {

// op: + - * / // % ** ~
Value binary_operation(const std::string& op, const Value& left, const Value& right);
Value negate(const Value& value);
// op: == != < <= > >=
bool compare_values(const std::string& op, const Value& left, const Value& right);
// Python's `needle in haystack` (substring, list element, dict key).
bool contains(const Value& haystack, const Value& needle);

// jinja2's getattr: a Python attribute (a method such as items or strip) first, then the item of that
// name, else Undefined. Raises for an attribute of Undefined.
Value get_attribute(const Value& object, const std::string& name);
// jinja2's getitem: the item first (negative list indices count from the end), then the attribute for
// a string key, else Undefined. Raises for an item of Undefined.
Value get_item(const Value& object, const Value& key);
// object[start:stop:step] for strings (by character) and lists; omitted bounds are Undefined.
Value slice_value(const Value& object, const Value& start, const Value& stop, const Value& step);

// The items a for loop or a filter walks: list elements, dict keys, a string's characters; Undefined
// is empty. Raises for values that are not iterable.
std::vector<Value> iterate(const Value& value);
// Python's len(); Undefined has length 0.
int64_t length_of(const Value& value);
// The characters (code points) of a UTF-8 string, each as its bytes.
// Calls f(begin, length) for each UTF-8 character of text, in order (invalid bytes one at a time).
void for_each_utf8_character(const std::string& text, const std::function<void(size_t, size_t)>& f);
std::vector<std::string> utf8_characters(const std::string& text);

// Raises Error("'name' is undefined") when value is Undefined (an operation jinja2 refuses on it).
void require_defined(const Value& value);

}  // namespace nucleus::jinja
