#include "server/chat_output_parser.h"

#include <algorithm>
#include <initializer_list>

#include "core/rng.h"

// One incremental parser serves both APIs: parse_chat_output feeds the whole text at once, so the
// stream's deltas equal the whole parse by construction as long as every decision depends only on
// text already seen — a decision that more text could change is postponed ("need more").
//
// Three stages, each holding back only what it cannot decide yet:
//   ThinkSplitter  output → reasoning | rest
//   CallScanner    rest   → content text | call regions (a region starts at a format's marker and
//                  is parsed whole: calls, or malformed → its text is content)
//   ContentSink    content text → ChatOutputDelta::content, dropping whitespace next to calls

namespace nucleus::server {

namespace {

using Json = nlohmann::ordered_json;
constexpr size_t npos = std::string_view::npos;

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kToolCallOpen = "<tool_call>", kToolCallClose = "</tool_call>";
constexpr std::string_view kToolCallsTag = "[TOOL_CALLS]", kArgsTag = "[ARGS]", kCallIdTag = "[CALL_ID]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

// ---- Text helpers ----------------------------------------------------------------------------

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

size_t skip_space(std::string_view t, size_t i) {
  while (i < t.size() && is_space(t[i])) ++i;
  return i;
}

std::string_view trim(std::string_view t) {
  const size_t begin = skip_space(t, 0);
  size_t end = t.size();
  while (end > begin && is_space(t[end - 1])) --end;
  return t.substr(begin, end - begin);
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// Length of the longest suffix of `text` that is a proper prefix of `marker` (may still become it).
size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (marker.starts_with(text.substr(text.size() - n))) return n;
  return 0;
}

// Whether the text at `i` starts with `tag`: yes, no, or undecided (the text ends inside a prefix).
enum class Match { yes, no, undecided };

Match match_at(std::string_view t, size_t i, std::string_view tag) {
  const std::string_view rest = t.substr(std::min(i, t.size()));
  if (rest.starts_with(tag)) return Match::yes;
  return tag.starts_with(rest) ? Match::undecided : Match::no;
}

// Whether the '{' at `i` opens an object whose first key (quotes included) is one of `keys`.
Match object_key(std::string_view t, size_t i, std::initializer_list<std::string_view> keys) {
  const size_t k = skip_space(t, i + 1);
  Match result = Match::no;
  for (std::string_view key : keys) {
    const Match m = match_at(t, k, key);
    if (m == Match::yes) return m;
    if (m == Match::undecided) result = m;
  }
  return result;
}

// ---- JSON helpers ----------------------------------------------------------------------------

// Where the JSON object/array opening at `start` ends: bracket matching outside strings, no other
// validation (nlohmann parses the span afterwards).
enum class Extent { complete, incomplete, invalid };
struct JsonSpan {
  Extent extent;
  size_t end;  // one past the closing bracket (complete) or the mismatched one (invalid)
};

JsonSpan json_span(std::string_view t, size_t start) {
  std::string closers;
  bool in_string = false, escaped = false;
  for (size_t i = start; i < t.size(); ++i) {
    const char c = t[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      closers.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (closers.empty() || closers.back() != c) return {Extent::invalid, i + 1};
      closers.pop_back();
      if (closers.empty()) return {Extent::complete, i + 1};
    }
  }
  return {Extent::incomplete, t.size()};
}

// Deeper values are refused: dumping and copying a JSON value recurse once per level.
constexpr int kMaxJsonDepth = 256;

bool too_deep(std::string_view t) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : t) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

// The JSON value `t` holds, or a discarded value (invalid, or nested too deep).
Json parse_json(std::string_view t) {
  if (too_deep(t)) return Json(Json::value_t::discarded);
  try {
    return Json::parse(t.begin(), t.end(), nullptr, /*allow_exceptions=*/false);
  } catch (...) {
    return Json(Json::value_t::discarded);
  }
}

std::string compact(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

const Json* member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string* string_member(const Json& object, const char* key) {
  const Json* value = member(object, key);
  return value && value->is_string() ? &value->get_ref<const std::string&>() : nullptr;
}

// ---- Calls -----------------------------------------------------------------------------------

struct Call {
  std::string id, name, arguments;  // id empty: generated from the seed
};

// A call's arguments as compact object text: an object, a string holding one (or blank), or
// null/absent ("{}"). Anything else: not a call.
std::optional<std::string> arguments_text(const Json* value) {
  if (value == nullptr || value->is_null()) return "{}";
  if (value->is_object()) return compact(*value);
  if (value->is_string()) {
    const std::string& text = value->get_ref<const std::string&>();
    if (trim(text).empty()) return "{}";
    const Json inner = parse_json(text);
    if (inner.is_object()) return compact(inner);
  }
  return std::nullopt;
}

// {"name": "f", "arguments"|"parameters": {...}[, "id": "..."]}, or OpenAI's {"function": {...}}.
std::optional<Call> call_from_json(const Json& object, bool keep_id) {
  const Json* function = &object;
  if (member(object, "name") == nullptr)
    if (const Json* inner = member(object, "function"); inner != nullptr && inner->is_object()) function = inner;
  const std::string* name = string_member(*function, "name");
  if (name == nullptr || name->empty()) return std::nullopt;
  const Json* args = member(*function, "arguments");
  if (args == nullptr) args = member(*function, "parameters");
  std::optional<std::string> arguments = arguments_text(args);
  if (!arguments) return std::nullopt;
  Call call{"", *name, std::move(*arguments)};
  if (const std::string* id = keep_id ? string_member(object, "id") : nullptr) call.id = *id;
  return call;
}

// ---- qwen3-xml -------------------------------------------------------------------------------

// The "type" names the request's tool `function` gives its parameter `parameter` (empty: unknown).
std::vector<std::string> parameter_types(const Json& tools, const std::string& function, const std::string& parameter) {
  std::vector<std::string> types;
  if (!tools.is_array()) return types;
  for (const Json& tool : tools) {
    const Json* fn = member(tool, "function");
    if (fn == nullptr) fn = &tool;
    const std::string* name = string_member(*fn, "name");
    if (name == nullptr || *name != function) continue;
    const Json* parameters = member(*fn, "parameters");
    const Json* properties = parameters ? member(*parameters, "properties") : nullptr;
    const Json* schema = properties ? member(*properties, parameter.c_str()) : nullptr;
    const Json* type = schema ? member(*schema, "type") : nullptr;
    if (type != nullptr && type->is_string()) types.push_back(type->get<std::string>());
    if (type != nullptr && type->is_array())
      for (const Json& t : *type)
        if (t.is_string()) types.push_back(t.get<std::string>());
    break;
  }
  return types;
}

Json typed_value(std::string_view raw, const std::vector<std::string>& types) {
  if (std::find(types.begin(), types.end(), "string") != types.end()) return Json(std::string(raw));
  Json value = parse_json(raw);
  if (!value.is_discarded()) return value;
  if (!types.empty()) {  // Python spellings, as the template's `| string` renders them
    const std::string_view word = trim(raw);
    if (word == "True") return true;
    if (word == "False") return false;
    if (word == "None") return nullptr;
  }
  return Json(std::string(raw));
}

// <function=NAME> (<parameter=P>VALUE</parameter>)* </function>, whitespace between the tags.
std::optional<Call> qwen3_xml_call(std::string_view body, const Json& tools) {
  constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  constexpr std::string_view kParameter = "<parameter=", kParameterEnd = "</parameter>";
  // NAME in "<tag=NAME>" starting at i; advances i past '>'.
  const auto tag_name = [&](size_t& i) -> std::optional<std::string> {
    const size_t close = body.find('>', i);
    if (close == npos) return std::nullopt;
    const std::string_view name = trim(body.substr(i, close - i));
    if (name.empty() || name.find_first_of("<\n") != npos || !valid_utf8(name)) return std::nullopt;
    i = close + 1;
    return std::string(name);
  };
  size_t i = skip_space(body, 0);
  if (!body.substr(i).starts_with(kFunction)) return std::nullopt;
  i += kFunction.size();
  const std::optional<std::string> function = tag_name(i);
  if (!function) return std::nullopt;
  Json args = Json::object();
  for (;;) {
    i = skip_space(body, i);
    if (body.substr(i).starts_with(kFunctionEnd)) break;
    if (!body.substr(i).starts_with(kParameter)) return std::nullopt;
    i += kParameter.size();
    const std::optional<std::string> parameter = tag_name(i);
    if (!parameter) return std::nullopt;
    const size_t end = std::min({body.find(kParameterEnd, i), body.find(kParameter, i), body.find(kFunctionEnd, i)});
    if (end == npos) return std::nullopt;
    std::string_view value = body.substr(i, end - i);
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    args[*parameter] = typed_value(value, parameter_types(tools, *function, *parameter));
    i = body.substr(end).starts_with(kParameterEnd) ? end + kParameterEnd.size() : end;
  }
  if (skip_space(body, i + kFunctionEnd.size()) != body.size()) return std::nullopt;
  return Call{"", *function, compact(args)};
}

// ---- Call regions ----------------------------------------------------------------------------

// The outcome of parsing the text from a call's opening marker on.
struct Region {
  enum class Kind { need_more, calls, malformed } kind = Kind::need_more;
  size_t length = 0;                   // text the region covers (malformed: becomes content)
  std::vector<Call> calls;
  std::optional<std::string> content;  // generic {"response": "..."}
};

Region need_more() { return {}; }
Region malformed(size_t length) { return {Region::Kind::malformed, length, {}, std::nullopt}; }
Region parsed(size_t length, std::vector<Call> calls) { return {Region::Kind::calls, length, std::move(calls), std::nullopt}; }
Region unfinished(std::string_view t, bool final) { return final ? malformed(t.size()) : need_more(); }

// hermes / qwen3-xml: <tool_call>BODY</tool_call>.
Region tool_call_block(std::string_view t, bool final, bool xml, const Json& tools) {
  const size_t close = t.find(kToolCallClose, kToolCallOpen.size());
  if (close == npos) return unfinished(t, final);
  const size_t end = close + kToolCallClose.size();
  const std::string_view body = t.substr(kToolCallOpen.size(), close - kToolCallOpen.size());
  const std::optional<Call> call = xml ? qwen3_xml_call(body, tools) : call_from_json(parse_json(trim(body)), false);
  return call ? parsed(end, {*call}) : malformed(end);
}

// The JSON value opening at i ('{' or '[') as calls: an object is one call, an array a list.
Region json_calls(std::string_view t, size_t i, bool final, bool keep_id) {
  if (i >= t.size()) return unfinished(t, final);
  if (t[i] != '{' && t[i] != '[') return malformed(i);
  const JsonSpan span = json_span(t, i);
  if (span.extent == Extent::incomplete) return unfinished(t, final);
  if (span.extent == Extent::invalid) return malformed(span.end);
  const Json value = parse_json(t.substr(i, span.end - i));
  std::vector<Call> calls;
  for (const Json& item : value.is_array() ? value : Json::array({value})) {
    std::optional<Call> call = call_from_json(item, keep_id);
    if (!call) return malformed(span.end);
    calls.push_back(std::move(*call));
  }
  return calls.empty() ? malformed(span.end) : parsed(span.end, std::move(calls));
}

// mistral: [TOOL_CALLS][{...}, ...]
Region mistral_block(std::string_view t, bool final) {
  return json_calls(t, skip_space(t, kToolCallsTag.size()), final, /*keep_id=*/true);
}

// mistral-args: [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}  ([CALL_ID]ID optional)
Region mistral_args_block(std::string_view t, bool final) {
  const auto is_name_char = [](char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == ':'; };
  size_t i = kToolCallsTag.size();
  while (i < t.size() && is_name_char(t[i])) ++i;
  if (i == t.size()) return unfinished(t, final);
  const std::string_view name = t.substr(kToolCallsTag.size(), i - kToolCallsTag.size());
  if (name.empty()) return mistral_block(t, final);  // the array form
  std::string id;
  const Match call_id = match_at(t, i, kCallIdTag);
  if (call_id == Match::undecided) return unfinished(t, final);
  if (call_id == Match::yes) {
    const size_t start = i + kCallIdTag.size();
    for (i = start; i < t.size() && is_alnum(t[i]);) ++i;
    id = t.substr(start, i - start);
  }
  const Match args = match_at(t, i, kArgsTag);
  if (args == Match::undecided) return unfinished(t, final);
  if (args == Match::no) return malformed(i);
  i = skip_space(t, i + kArgsTag.size());
  if (i == t.size()) return unfinished(t, final);
  if (t[i] != '{') return malformed(i);
  const JsonSpan span = json_span(t, i);
  if (span.extent == Extent::incomplete) return unfinished(t, final);
  if (span.extent == Extent::invalid) return malformed(span.end);
  const Json arguments = parse_json(t.substr(i, span.end - i));
  if (!arguments.is_object()) return malformed(span.end);
  return parsed(span.end, {Call{id, std::string(name), compact(arguments)}});
}

// llama3-json: [<|python_tag|>]{...} [[;][<|python_tag|>]{...}]... up to the end of the output.
Region llama3_block(std::string_view t, bool final) {
  size_t i = t.starts_with(kPythonTag) ? kPythonTag.size() : 0;
  std::vector<Call> calls;
  for (;;) {
    i = skip_space(t, i);
    if (!calls.empty() && i < t.size() && t[i] == ';') i = skip_space(t, i + 1);
    if (!calls.empty()) {
      const Match tag = match_at(t, i, kPythonTag);
      if (tag == Match::yes) i = skip_space(t, i + kPythonTag.size());
      if (tag == Match::undecided && i < t.size()) return unfinished(t, final);
    }
    if (i == t.size()) {
      if (!final) return need_more();
      return calls.empty() ? malformed(t.size()) : parsed(t.size(), std::move(calls));
    }
    if (t[i] != '{') return malformed(std::max<size_t>(i, 1));
    Region one = json_calls(t, i, final, /*keep_id=*/false);
    if (one.kind != Region::Kind::calls) return one;
    calls.push_back(std::move(one.calls.front()));
    i = one.length;
  }
}

// generic: the whole output is {"tool_calls": [...]}, {"tool_call": {...}} or {"response": "..."}.
Region generic_block(std::string_view t, bool final) {
  const size_t i = skip_space(t, 0);
  if (i == t.size()) return unfinished(t, final);
  if (t[i] != '{') return malformed(t.size());
  const Match key = object_key(t, i, {"\"tool_calls\"", "\"tool_call\"", "\"response\""});
  if (key == Match::undecided) return unfinished(t, final);
  if (key == Match::no) return malformed(t.size());
  const JsonSpan span = json_span(t, i);
  if (span.extent == Extent::incomplete) return unfinished(t, final);
  if (span.extent == Extent::invalid || skip_space(t, span.end) != t.size()) return malformed(t.size());
  if (!final) return need_more();  // only whitespace may follow
  const Json object = parse_json(t.substr(i, span.end - i));
  std::vector<Call> calls;
  const Json* list = member(object, "tool_calls");
  const Json* single = member(object, "tool_call");
  if (list != nullptr && list->is_array()) {
    for (const Json& item : *list) {
      std::optional<Call> call = call_from_json(item, false);
      if (!call) return malformed(t.size());
      calls.push_back(std::move(*call));
    }
  } else if (single != nullptr && single->is_object()) {
    std::optional<Call> call = call_from_json(*single, false);
    if (!call) return malformed(t.size());
    calls.push_back(std::move(*call));
  } else if (const std::string* response = string_member(object, "response"); response != nullptr && !list && !single) {
    Region region = parsed(t.size(), {});
    region.content = *response;
    return region;
  }
  return calls.empty() ? malformed(t.size()) : parsed(t.size(), std::move(calls));
}

// ---- Stages ----------------------------------------------------------------------------------

// Splits the output into reasoning and the rest (see the header).
class ThinkSplitter {
 public:
  explicit ThinkSplitter(const ChatOutputOptions& o)
      : state_(!o.reasoning ? State::rest : o.starts_in_reasoning ? State::inside : State::opening) {}

  void feed(std::string_view piece, bool final, std::string& reasoning, std::string& rest) {
    buf_ += piece;
    for (;;) {
      const std::string_view b = buf_;
      switch (state_) {
        case State::opening: {
          const size_t i = skip_space(b, 0);
          const Match open = match_at(b, i, kThinkOpen);
          if (open == Match::undecided && !final) return;
          if (open == Match::yes) {
            buf_.erase(0, i + kThinkOpen.size());
            state_ = State::inside;
          } else {
            state_ = State::rest;
          }
          break;
        }
        case State::inside: {
          const size_t close = b.find(kThinkClose);
          if (close == npos) {
            const size_t keep = final ? 0 : partial_marker(b, kThinkClose);
            reasoning.append(b.substr(0, b.size() - keep));
            buf_.erase(0, b.size() - keep);
            return;
          }
          reasoning.append(b.substr(0, close));
          buf_.erase(0, close + kThinkClose.size());
          state_ = State::after_close;
          break;
        }
        case State::after_close:
          buf_.erase(0, skip_space(b, 0));
          if (buf_.empty()) return;
          state_ = State::rest;
          break;
        case State::rest:
          rest += buf_;
          buf_.clear();
          return;
      }
    }
  }

 private:
  enum class State { opening, inside, after_close, rest } state_;
  std::string buf_;
};

// Content text and calls → a delta. When calls are possible, whitespace is held back: dropped
// before a call, after the last call, and at the start of the content after a call.
class ContentSink {
 public:
  ContentSink(bool calls_possible, uint64_t id_seed) : calls_possible_(calls_possible), id_seed_(id_seed) {}
  void bind(ChatOutputDelta* out) { out_ = out; }

  void text(std::string_view s) {
    if (!calls_possible_) {
      out_->content.append(s);
      return;
    }
    size_t last = s.size();
    while (last > 0 && is_space(s[last - 1])) --last;
    if (last == 0) {
      held_.append(s);
      return;
    }
    std::string_view body = s.substr(0, last);
    if (!started_ && calls_ > 0) {  // content would start with whitespace after a call
      held_.clear();
      body.remove_prefix(skip_space(body, 0));
    }
    out_->content += held_;
    out_->content.append(body);
    held_.assign(s.substr(last));
    started_ = true;
  }

  void call(const Call& call) {
    held_.clear();
    const int index = calls_++;
    out_->tool_calls.push_back({index, call.id.empty() ? tool_call_id(id_seed_, index) : call.id, call.name, ""});
    out_->tool_calls.push_back({index, "", "", call.arguments});
  }

  void finish() {
    if (calls_ == 0) out_->content += held_;
    held_.clear();
  }

 private:
  bool calls_possible_;
  uint64_t id_seed_;
  ChatOutputDelta* out_ = nullptr;
  std::string held_;      // trailing whitespace not yet emitted
  bool started_ = false;  // content with non-whitespace has been emitted
  int calls_ = 0;
};

// The rest of the output → content text and call regions, per format.
class CallScanner {
 public:
  explicit CallScanner(const ChatOutputOptions& o)
      : format_(o.tool_format), tools_(o.tools), in_region_(format_ == ToolCallFormat::generic) {}

  void feed(std::string_view text, bool final, ContentSink& sink) {
    if (!format_) {
      sink.text(text);
      return;
    }
    buf_ += text;
    size_t pos = 0;
    for (;;) {
      const std::string_view rest = std::string_view(buf_).substr(pos);
      if (plain_) {
        sink.text(rest);
        pos = buf_.size();
        break;
      }
      if (!in_region_) {
        const auto [end, found] = find_marker(rest, final);
        sink.text(rest.substr(0, end));
        pos += end;
        if (!found) break;
        in_region_ = true;
        continue;
      }
      Region region = parse_region(rest, final);
      if (region.kind == Region::Kind::need_more) break;
      region.length = std::min(region.length, rest.size());
      in_region_ = false;
      plain_ = *format_ == ToolCallFormat::generic;  // generic: one decision for the whole output
      if (region.kind == Region::Kind::calls) {
        for (const Call& call : region.calls) sink.call(call);
        if (region.content) sink.text(*region.content);
      } else {
        region.length = std::max<size_t>(region.length, plain_ ? 0 : 1);  // always progress
        sink.text(rest.substr(0, region.length));
      }
      pos += region.length;
    }
    buf_.erase(0, pos);
  }

 private:
  struct MarkerScan {
    size_t end;  // content ends here
    bool found;  // and a call region opens here
  };

  MarkerScan find_marker(std::string_view t, bool final) const {
    switch (*format_) {
      case ToolCallFormat::hermes:
      case ToolCallFormat::qwen3_xml: return find_literal(t, kToolCallOpen, final);
      case ToolCallFormat::mistral:
      case ToolCallFormat::mistral_args: return find_literal(t, kToolCallsTag, final);
      case ToolCallFormat::llama3_json: return find_llama3(t, final);
      case ToolCallFormat::generic: break;
    }
    return {t.size(), false};
  }

  static MarkerScan find_literal(std::string_view t, std::string_view marker, bool final) {
    const size_t at = t.find(marker);
    if (at != npos) return {at, true};
    return {t.size() - (final ? 0 : partial_marker(t, marker)), false};
  }

  // <|python_tag|>, or a '{' whose first key is "name" or "type".
  static MarkerScan find_llama3(std::string_view t, bool final) {
    for (size_t i = 0; i < t.size(); ++i) {
      Match m = Match::no;
      if (t[i] == '<') m = match_at(t, i, kPythonTag);
      if (t[i] == '{') m = object_key(t, i, {"\"name\"", "\"type\""});
      if (m == Match::yes) return {i, true};
      if (m == Match::undecided) return {final ? t.size() : i, false};
    }
    return {t.size(), false};
  }

  Region parse_region(std::string_view t, bool final) const {
    switch (*format_) {
      case ToolCallFormat::hermes: return tool_call_block(t, final, false, tools_);
      case ToolCallFormat::qwen3_xml: return tool_call_block(t, final, true, tools_);
      case ToolCallFormat::llama3_json: return llama3_block(t, final);
      case ToolCallFormat::mistral: return mistral_block(t, final);
      case ToolCallFormat::mistral_args: return mistral_args_block(t, final);
      case ToolCallFormat::generic: return generic_block(t, final);
    }
    return malformed(t.size());
  }

  std::optional<ToolCallFormat> format_;
  const Json& tools_;
  bool in_region_;      // buf_ starts with a call region (generic: the whole output is one)
  bool plain_ = false;  // no more calls possible (generic, once decided)
  std::string buf_;     // text not yet decided
};

}  // namespace

std::string tool_call_id(uint64_t seed, int index) {
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const uint64_t base = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(index) + 0x243f6a8885a308d3ull));
  std::string id = "call_";
  for (uint64_t i = 0; i < 24; ++i) id += kAlphabet[splitmix64(base + i) % kAlphabet.size()];
  return id;
}

struct ChatOutputStream::State {
  explicit State(ChatOutputOptions o)
      : options(std::move(o)), think(options), scanner(options), sink(options.tool_format.has_value(), options.id_seed) {}
  ChatOutputOptions options;
  ThinkSplitter think;
  CallScanner scanner;  // refers to options.tools
  ContentSink sink;
  bool finished = false;
};

ChatOutputStream::ChatOutputStream(ChatOutputOptions options) : state_(std::make_unique<State>(std::move(options))) {}
ChatOutputStream::~ChatOutputStream() = default;
ChatOutputStream::ChatOutputStream(ChatOutputStream&&) noexcept = default;
ChatOutputStream& ChatOutputStream::operator=(ChatOutputStream&&) noexcept = default;

ChatOutputDelta ChatOutputStream::feed(std::string_view piece) { return advance(piece, false); }
ChatOutputDelta ChatOutputStream::finish() { return advance({}, true); }

ChatOutputDelta ChatOutputStream::advance(std::string_view piece, bool final) {
  ChatOutputDelta delta;
  State& s = *state_;
  if (s.finished) return delta;
  s.sink.bind(&delta);
  std::string rest;
  s.think.feed(piece, final, delta.reasoning_content, rest);
  s.scanner.feed(rest, final, s.sink);
  if (final) {
    s.sink.finish();
    s.finished = true;
  }
  s.sink.bind(nullptr);
  return delta;
}

void append_delta(ChatOutput& output, const ChatOutputDelta& delta) {
  output.reasoning_content += delta.reasoning_content;
  output.content += delta.content;
  for (const ToolCallDelta& d : delta.tool_calls) {
    if (d.index < 0) continue;
    if (static_cast<size_t>(d.index) >= output.tool_calls.size()) output.tool_calls.resize(d.index + 1);
    ParsedToolCall& call = output.tool_calls[d.index];
    if (!d.id.empty()) call.id = d.id;
    if (!d.name.empty()) call.name = d.name;
    call.arguments += d.arguments;
  }
}

ChatOutput parse_chat_output(std::string_view text, const ChatOutputOptions& options) {
  ChatOutputStream stream(options);
  ChatOutput output;
  append_delta(output, stream.feed(text));
  append_delta(output, stream.finish());
  return output;
}

}  // namespace nucleus::server
