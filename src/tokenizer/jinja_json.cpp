// The tojson filter: Python's json.dumps, byte for byte, for the values templates hold.
#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/unicode.h"

namespace nucleus::jinja {

namespace {

// \uXXXX for a UTF-16 code unit (every caller's is ≤ 0xFFFF; the buffer has room for any uint32).
void append_escape(uint32_t code_unit, std::string& out) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\u%04x", code_unit);
  out += buffer;
}

void append_json_string(const std::string& text, bool ensure_ascii, std::string& out) {
  out += '"';
  size_t pos = 0;
  while (pos < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            append_escape(c, out);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++pos;
      continue;
    }
    const size_t begin = pos;
    uint32_t codepoint = 0;
    const bool valid = unicode::next_codepoint(text, pos, codepoint);
    if (!ensure_ascii || !valid) {
      out.append(text, begin, pos - begin);
    } else if (codepoint >= 0x10000) {  // a UTF-16 surrogate pair, as Python writes it
      const uint32_t v = codepoint - 0x10000;
      append_escape(0xD800 + (v >> 10), out);
      append_escape(0xDC00 + (v & 0x3FF), out);
    } else {
      append_escape(codepoint, out);
    }
  }
  out += '"';
}

std::string key_text(const Value& key) {
  switch (key.kind) {
    case ValueKind::string: return key.string;
    case ValueKind::integer: return std::to_string(key.integer);
    case ValueKind::floating: return python_float_repr(key.floating);
    case ValueKind::boolean: return key.boolean ? "true" : "false";
    case ValueKind::none: return "null";
    default: throw Error(std::string("keys must be str, int, float, bool or None, not ") + type_name(key));
  }
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonFormat& format) : format_(format) {
    indent_unit_ = !format.indent_text.empty() ? format.indent_text
                                               : std::string(static_cast<size_t>(std::max(format.indent, 0)), ' ');
  }

  void write(const Value& value, int depth, std::string& out) const {
    switch (value.kind) {
      case ValueKind::none: out += "null"; return;
      case ValueKind::boolean: out += value.boolean ? "true" : "false"; return;
      case ValueKind::integer: out += std::to_string(value.integer); return;
      case ValueKind::floating: {
        const std::string repr = python_float_repr(value.floating);
        out += repr == "nan" ? "NaN" : repr == "inf" ? "Infinity" : repr == "-inf" ? "-Infinity" : repr;
        return;
      }
      case ValueKind::string: append_json_string(value.string, format_.ensure_ascii, out); return;
      case ValueKind::list: {
        if (value.list->empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < value.list->size(); ++i) {
          if (i) out += format_.item_separator;
          newline(depth + 1, out);
          write((*value.list)[i], depth + 1, out);
        }
        newline(depth, out);
        out += ']';
        return;
      }
      case ValueKind::dict: {
        if (value.dict->size() == 0) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> items;
        for (const auto& [key, item] : value.dict->entries()) items.emplace_back(key_text(key), &item);
        if (format_.sort_keys)
          std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += format_.item_separator;
          newline(depth + 1, out);
          append_json_string(items[i].first, format_.ensure_ascii, out);
          out += format_.key_separator;
          write(*items[i].second, depth + 1, out);
        }
        newline(depth, out);
        out += '}';
        return;
      }
      default:
        throw Error(std::string("Object of type ") + type_name(value) + " is not JSON serializable");
    }
  }

 private:
  const JsonFormat& format_;
  std::string indent_unit_;

  void newline(int depth, std::string& out) const {
    if (format_.indent < 0 && format_.indent_text.empty()) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += indent_unit_;
  }
};

}  // namespace

std::string to_json_text(const Value& value, const JsonFormat& format) {
  std::string out;
  JsonWriter(format).write(value, 0, out);
  return out;
}

}  // namespace nucleus::jinja
