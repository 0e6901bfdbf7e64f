// The Python methods of str, dict and list that chat templates call ('a,b'.split(','), d.items(),
// d.get('k', x), s.startswith(('a', 'b')), '{}'.format(x), ...).
#include <algorithm>
#include <cctype>
#include <optional>

#include "core/error.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_operations.h"
#include "tokenizer/unicode.h"

namespace nucleus::jinja {

namespace {

// Python's str.isspace() for one code point.
bool is_python_whitespace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

const std::string& string_argument(const Value* value, const char* method) {
  if (!value || value->kind != ValueKind::string)
    throw Error(std::string(method) + "() argument must be str, not " + (value ? type_name(*value) : "nothing"));
  return value->string;
}

std::optional<int64_t> integer_argument(const Value* value) {
  if (!value || value->is_none()) return std::nullopt;
  if (value->kind != ValueKind::integer) throw Error(std::string("an integer is required, not ") + type_name(*value));
  return value->integer;
}

// str.split / str.rsplit.
Value split(const std::string& text, const Value* separator_value, const Value* maxsplit_value, bool from_right) {
  int64_t maxsplit = integer_argument(maxsplit_value).value_or(-1);
  std::vector<std::string> parts;
  if (!separator_value || separator_value->is_none()) {
    // Runs of whitespace separate; leading/trailing whitespace gives no empty parts.
    std::vector<std::string> characters = utf8_characters(text);
    auto space = [&](size_t i) {
      size_t pos = 0;
      uint32_t c = 0;
      return unicode::next_codepoint(characters[i], pos, c) && is_python_whitespace(c);
    };
    const size_t n = characters.size();
    if (!from_right) {
      size_t i = 0;
      while (true) {
        while (i < n && space(i)) ++i;
        if (i >= n) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
          std::string rest;
          for (size_t k = i; k < n; ++k) rest += characters[k];
          parts.push_back(python_strip(rest, nullptr, false, true));
          break;
        }
        std::string word;
        while (i < n && !space(i)) word += characters[i++];
        parts.push_back(word);
      }
    } else {
      size_t i = n;
      while (true) {
        while (i > 0 && space(i - 1)) --i;
        if (i == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
          std::string rest;
          for (size_t k = 0; k < i; ++k) rest += characters[k];
          parts.push_back(python_strip(rest, nullptr, true, false));
          break;
        }
        std::string word;
        size_t end = i;
        while (i > 0 && !space(i - 1)) --i;
        for (size_t k = i; k < end; ++k) word += characters[k];
        parts.push_back(word);
      }
      std::reverse(parts.begin(), parts.end());
    }
  } else {
    const std::string& separator = string_argument(separator_value, "split");
    if (separator.empty()) throw Error("empty separator");
    if (!from_right) {
      size_t start = 0;
      while (true) {
        const size_t at = text.find(separator, start);
        if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
          parts.push_back(text.substr(start));
          break;
        }
        parts.push_back(text.substr(start, at - start));
        start = at + separator.size();
      }
    } else {
      size_t end = text.size();
      while (true) {
        const size_t at = end >= separator.size() ? text.rfind(separator, end - separator.size()) : std::string::npos;
        if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
          parts.push_back(text.substr(0, end));
          break;
        }
        parts.push_back(text.substr(at + separator.size(), end - at - separator.size()));
        end = at;
      }
      std::reverse(parts.begin(), parts.end());
    }
  }
  std::vector<Value> values;
  for (std::string& part : parts) values.push_back(Value::from_string(std::move(part)));
  return Value::from_list(std::move(values));
}

// str.startswith / endswith: a prefix or a tuple of them.
bool affix_matches(const std::string& text, const Value* affix, bool at_start) {
  if (!affix) throw Error("startswith/endswith takes one argument");
  auto one = [&](const Value& v) {
    if (v.kind != ValueKind::string) throw Error(std::string("startswith/endswith first arg must be str or a tuple of str, not ") + type_name(v));
    if (v.string.size() > text.size()) return false;
    return at_start ? text.compare(0, v.string.size(), v.string) == 0
                    : text.compare(text.size() - v.string.size(), v.string.size(), v.string) == 0;
  };
  if (affix->kind == ValueKind::list && affix->is_tuple) {
    for (const Value& v : *affix->list)
      if (one(v)) return true;
    return false;
  }
  return one(*affix);
}

std::string ascii_case(std::string text, bool upper) {
  for (char& c : text) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Python's str.title(): a letter after a cased letter is lower-cased, any other letter upper-cased.
std::string python_title(const std::string& text) {
  std::string out = text;
  bool previous_cased = false;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) {
      c = static_cast<char>(previous_cased ? std::tolower(u) : std::toupper(u));
      previous_cased = true;
    } else {
      previous_cased = false;
    }
  }
  return out;
}

// str.format with automatic ({}), numbered ({0}) and named ({name}) fields, no format specs.
std::string python_format(const std::string& pattern, const CallArguments& arguments) {
  std::string out;
  size_t next_automatic = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '{' && i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < pattern.size() && pattern[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = pattern.find('}', i);
      if (close == std::string::npos) throw Error("Single '{' encountered in format string");
      const std::string field = pattern.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos)
        throw Error("str.format field '{" + field + "}' is not supported by nucleus's Jinja interpreter");
      const Value* value = nullptr;
      if (field.empty()) {
        if (next_automatic >= arguments.positional.size()) throw Error("Replacement index out of range for positional args tuple");
        value = &arguments.positional[next_automatic++];
      } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
        const size_t index = std::stoul(field);
        if (index >= arguments.positional.size()) throw Error("Replacement index out of range for positional args tuple");
        value = &arguments.positional[index];
      } else {
        for (const auto& [key, v] : arguments.keyword)
          if (key == field) value = &v;
        if (!value) throw Error("KeyError: '" + field + "'");
      }
      out += to_python_string(*value);
      i = close;
    } else if (c == '}') {
      throw Error("Single '}' encountered in format string");
    } else {
      out += c;
    }
  }
  return out;
}

Value string_method(const Value& object, const std::string& name, CallArguments& args) {
  const std::string& text = object.string;
  const Value* first = args.positional.empty() ? nullptr : &args.positional[0];
  const Value* second = args.positional.size() > 1 ? &args.positional[1] : nullptr;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const std::string* characters = first && !first->is_none() ? &string_argument(first, name.c_str()) : nullptr;
    return Value::from_string(python_strip(text, characters, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit")
    return split(text, argument(args, 0, "sep"), argument(args, 1, "maxsplit"), name == "rsplit");
  if (name == "startswith" || name == "endswith") return Value::from_bool(affix_matches(text, first, name == "startswith"));
  if (name == "upper" || name == "lower") return Value::from_string(ascii_case(text, name == "upper"));
  if (name == "title") return Value::from_string(python_title(text));
  if (name == "capitalize") {
    std::string out = ascii_case(text, false);
    if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return Value::from_string(out);
  }
  if (name == "replace") {
    const std::string& from = string_argument(first, "replace");
    const std::string& to = string_argument(second, "replace");
    int64_t count = integer_argument(args.positional.size() > 2 ? &args.positional[2] : nullptr).value_or(-1);
    std::string out;
    if (from.empty()) {
      // Python inserts `to` between characters (and at both ends).
      const std::vector<std::string> characters = utf8_characters(text);
      for (const std::string& ch : characters) {
        if (count-- != 0) out += to;
        out += ch;
      }
      if (count != 0) out += to;
      return Value::from_string(out);
    }
    size_t start = 0;
    while (count != 0) {
      const size_t at = text.find(from, start);
      if (at == std::string::npos) break;
      out += text.substr(start, at - start) + to;
      start = at + from.size();
      --count;
    }
    return Value::from_string(out + text.substr(start));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const std::string& needle = string_argument(first, name.c_str());
    if (args.positional.size() > 1) throw Error("str." + name + "() with start/end is not supported by nucleus's Jinja interpreter");
    if (name == "count") {
      if (needle.empty()) return Value::from_int(static_cast<int64_t>(utf8_characters(text).size()) + 1);
      int64_t n = 0;
      for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
      return Value::from_int(n);
    }
    const size_t at = name[0] == 'r' ? text.rfind(needle) : text.find(needle);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") throw Error("substring not found");
      return Value::from_int(-1);
    }
    return Value::from_int(static_cast<int64_t>(utf8_characters(text.substr(0, at)).size()));
  }
  if (name == "join") {
    if (!first) throw Error("join() takes exactly one argument");
    std::string out;
    bool start = true;
    for (const Value& item : iterate(*first)) {
      if (item.kind != ValueKind::string) throw Error(std::string("sequence item: expected str instance, ") + type_name(item) + " found");
      if (!start) out += text;
      out += item.string;
      check_string_size(out.size());
      start = false;
    }
    return Value::from_string(out);
  }
  if (name == "format") return Value::from_string(python_format(text, args));
  if (name == "splitlines") {
    std::vector<Value> lines;
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n' || text[i] == '\r') {
        lines.push_back(Value::from_string(text.substr(start, i - start)));
        if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < text.size()) lines.push_back(Value::from_string(text.substr(start)));
    return Value::from_list(std::move(lines));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& affix = string_argument(first, name.c_str());
    if (name == "removeprefix" && text.compare(0, affix.size(), affix) == 0) return Value::from_string(text.substr(affix.size()));
    if (name == "removesuffix" && affix.size() <= text.size() && !affix.empty() &&
        text.compare(text.size() - affix.size(), affix.size(), affix) == 0)
      return Value::from_string(text.substr(0, text.size() - affix.size()));
    return Value::from_string(text);
  }
  auto all_of = [&](auto predicate) {
    if (text.empty()) return Value::from_bool(false);
    for (unsigned char c : text)
      if (!predicate(c)) return Value::from_bool(false);
    return Value::from_bool(true);
  };
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return all_of([](unsigned char c) { return std::isdigit(c) != 0; });
  if (name == "isalpha") return all_of([](unsigned char c) { return std::isalpha(c) != 0; });
  if (name == "isalnum") return all_of([](unsigned char c) { return std::isalnum(c) != 0; });
  if (name == "isspace") return all_of([](unsigned char c) { return std::isspace(c) != 0; });
  throw Error("str." + name + "() is not supported by nucleus's Jinja interpreter");
}

Value dict_method(const Value& object, const std::string& name, CallArguments& args) {
  const Dict& dict = *object.dict;
  if (name == "items" || name == "keys" || name == "values") {
    std::vector<Value> out;
    for (const auto& [key, value] : dict.entries()) {
      if (name == "items") {
        out.push_back(Value::from_list({key, value}, /*tuple=*/true));
      } else {
        out.push_back(name == "keys" ? key : value);
      }
    }
    return Value::from_list(std::move(out));
  }
  if (name == "get") {
    if (args.positional.empty()) throw Error("get expected at least 1 argument, got 0");
    const Value* found = dict.find(args.positional[0]);
    if (found) return *found;
    return args.positional.size() > 1 ? args.positional[1] : Value::none();
  }
  if (name == "copy") return Value::from_dict(dict);
  throw Error("dict." + name + "() is not supported by nucleus's Jinja interpreter");
}

Value list_method(const Value& object, const std::string& name, CallArguments& args) {
  const std::vector<Value>& list = *object.list;
  if (name == "index" || name == "count") {
    if (args.positional.empty()) throw Error(name + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      if (values_equal(list[i], args.positional[0])) {
        if (name == "index") return Value::from_int(static_cast<int64_t>(i));
        ++n;
      }
    }
    if (name == "index") throw Error(to_python_repr(args.positional[0]) + " is not in list");
    return Value::from_int(n);
  }
  if (name == "copy") return Value::from_list(list);
  throw Error("list." + name + "() is not supported by nucleus's Jinja interpreter");
}

constexpr std::string_view kStringMethods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "title",
    "capitalize", "replace", "find", "rfind", "index", "rindex", "count", "join", "format", "splitlines",
    "removeprefix", "removesuffix", "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum", "isspace",
    "casefold", "center", "encode", "expandtabs", "format_map", "isascii", "isidentifier", "islower",
    "isprintable", "istitle", "isupper", "ljust", "maketrans", "partition", "rjust", "rpartition", "swapcase",
    "translate", "zfill",
};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get", "copy", "fromkeys"};
constexpr std::string_view kListMethods[] = {"index", "count", "copy"};
// What jinja2's ImmutableSandboxedEnvironment refuses to call (modifies_known_mutable).
constexpr std::string_view kDictMutators[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::string_view kListMutators[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

}  // namespace

std::string python_strip(const std::string& text, const std::string* characters, bool left, bool right) {
  std::vector<std::string> chars_to_strip;
  if (characters) chars_to_strip = utf8_characters(*characters);
  const std::vector<std::string> characters_of_text = utf8_characters(text);
  auto strippable = [&](const std::string& c) {
    if (characters) return std::find(chars_to_strip.begin(), chars_to_strip.end(), c) != chars_to_strip.end();
    size_t pos = 0;
    uint32_t codepoint = 0;
    return unicode::next_codepoint(c, pos, codepoint) && pos == c.size() && is_python_whitespace(codepoint);
  };
  size_t begin = 0, end = characters_of_text.size();
  if (left)
    while (begin < end && strippable(characters_of_text[begin])) ++begin;
  if (right)
    while (end > begin && strippable(characters_of_text[end - 1])) --end;
  std::string out;
  for (size_t i = begin; i < end; ++i) out += characters_of_text[i];
  return out;
}

Value find_method(const Value& object, const std::string& name) {
  const char* type = nullptr;
  std::function<Value(const Value&, const std::string&, CallArguments&)> method;
  if (object.kind == ValueKind::string && listed(kStringMethods, name)) {
    type = "str";
    method = string_method;
  } else if (object.kind == ValueKind::dict && listed(kDictMethods, name)) {
    type = "dict";
    method = dict_method;
  } else if (object.kind == ValueKind::list && !object.is_tuple && listed(kListMethods, name)) {
    type = "list";
    method = list_method;
  } else if ((object.kind == ValueKind::dict && listed(kDictMutators, name)) ||
             (object.kind == ValueKind::list && !object.is_tuple && listed(kListMutators, name))) {
    const std::string message = "access to attribute '" + name + "' of '" + type_name(object) +
                                "' object is unsafe (Hugging Face renders templates in jinja2's immutable sandbox)";
    return Value::from_function(name, [message](CallArguments&) -> Value { throw Error(message); });
  } else {
    return Value::undefined(name);
  }
  Value bound_object = object;
  return Value::from_function(std::string(type) + "." + name, [bound_object, name, method](CallArguments& args) {
    return method(bound_object, name, args);
  });
}

}  // namespace nucleus::jinja
