// Chat output parsing: per tool-call format a table of outputs (single and parallel calls, text
// before a call, malformed calls kept as content, reasoning blocks) with the expected reasoning,
// content and calls; the streaming parser against the whole-text parser for every case under
// char-by-char and random chunkings; and seeded random soups (markers, JSON fragments, raw bytes)
// that must neither throw nor lose text.
#include "server/chat_output_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace nucleus::server {
namespace {

using Json = nlohmann::ordered_json;
using F = ToolCallFormat;

const Json& test_tools() {
  static const Json tools = Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "write_file", "description": "Write a file",
      "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"},
        "ratio": {"type": "number"}, "force": {"type": "boolean"}, "options": {"type": "object"},
        "tags": {"type": "array"}, "note": {"type": ["string", "null"]}}}}}
  ])");
  return tools;
}

ChatOutputOptions opts(std::optional<F> format, bool reasoning = false, bool starts_in_reasoning = false) {
  ChatOutputOptions o;
  o.tool_format = format;
  o.tools = test_tools();
  o.reasoning = reasoning;
  o.starts_in_reasoning = starts_in_reasoning;
  o.id_seed = 1234;
  return o;
}

struct ExpectedCall {
  std::string name, arguments, id = "";  // id empty: the generated one
};

struct Case {
  std::string label;
  ChatOutputOptions options;
  std::string text;
  std::string content, reasoning = "";
  std::vector<ExpectedCall> calls = {};
};

// ---- Helpers ---------------------------------------------------------------------------------

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

bool well_formed_id(const std::string& id) {
  if (id.size() != 29 || id.rfind("call_", 0) != 0) return false;
  for (size_t i = 5; i < id.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(id[i]))) return false;
  return true;
}

// Piece boundaries: UTF-8 characters grouped 1..max_chars at a time (max_chars 1: char by char).
// bytewise: any byte offset (for inputs that are not UTF-8).
std::vector<std::string> split(const std::string& text, uint32_t seed, int max_chars, bool bytewise = false) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < text.size(); ++i)
    if (bytewise || (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  starts.push_back(text.size());
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> take(1, max_chars);
  std::vector<std::string> pieces;
  for (size_t k = 0; k + 1 < starts.size();) {
    const size_t next = std::min(starts.size() - 1, k + static_cast<size_t>(take(rng)));
    pieces.push_back(text.substr(starts[k], starts[next] - starts[k]));
    k = next;
  }
  return pieces;
}

// Feeds the pieces, accumulating the deltas independently of append_delta and checking each
// delta's shape: a call's first delta has id and name and empty arguments, later ones neither.
ChatOutput run_stream(const std::vector<std::string>& pieces, const ChatOutputOptions& options, bool check_utf8) {
  ChatOutputStream stream(options);
  ChatOutput out;
  const auto apply = [&](const ChatOutputDelta& d) {
    EXPECT_EQ(d.empty(), d.content.empty() && d.reasoning_content.empty() && d.tool_calls.empty());
    if (check_utf8) {
      EXPECT_TRUE(valid_utf8(d.content)) << "content delta splits a character";
      EXPECT_TRUE(valid_utf8(d.reasoning_content)) << "reasoning delta splits a character";
    }
    out.content += d.content;
    out.reasoning_content += d.reasoning_content;
    for (const ToolCallDelta& t : d.tool_calls) {
      ASSERT_GE(t.index, 0);
      ASSERT_LE(static_cast<size_t>(t.index), out.tool_calls.size()) << "a call's index skips ahead";
      if (static_cast<size_t>(t.index) == out.tool_calls.size()) {
        EXPECT_FALSE(t.id.empty());
        EXPECT_FALSE(t.name.empty());
        EXPECT_EQ(t.arguments, "");
        out.tool_calls.push_back({t.id, t.name, ""});
      } else {
        EXPECT_TRUE(t.id.empty() && t.name.empty()) << "id/name repeated after the first delta";
        out.tool_calls[t.index].arguments += t.arguments;
      }
    }
  };
  for (const std::string& piece : pieces) apply(stream.feed(piece));
  apply(stream.finish());
  EXPECT_TRUE(stream.feed("ignored after finish").empty());
  return out;
}

void expect_same(const ChatOutput& a, const ChatOutput& b) {
  EXPECT_EQ(a.content, b.content);
  EXPECT_EQ(a.reasoning_content, b.reasoning_content);
  ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size());
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    EXPECT_EQ(a.tool_calls[i].id, b.tool_calls[i].id);
    EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name);
    EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments);
  }
}

// The stream, under char-by-char and `seeds` random chunkings, equals the whole parse.
void expect_stream_matches(const std::string& text, const ChatOutputOptions& options, int seeds, bool bytewise = false) {
  const ChatOutput whole = parse_chat_output(text, options);
  const bool utf8 = !bytewise && valid_utf8(text);
  {
    SCOPED_TRACE("char by char");
    expect_same(run_stream(split(text, 0, 1, bytewise), options, utf8), whole);
  }
  {
    SCOPED_TRACE("one piece");
    expect_same(run_stream({text}, options, utf8), whole);
  }
  for (int seed = 1; seed <= seeds; ++seed) {
    SCOPED_TRACE("random chunks, seed " + std::to_string(seed));
    expect_same(run_stream(split(text, seed, 1 + seed % 9, bytewise), options, utf8), whole);
  }
}

void expect_case(const Case& c) {
  SCOPED_TRACE(c.label + " | " + c.text);
  const ChatOutput out = parse_chat_output(c.text, c.options);
  EXPECT_EQ(out.content, c.content);
  EXPECT_EQ(out.reasoning_content, c.reasoning);
  ASSERT_EQ(out.tool_calls.size(), c.calls.size());
  for (size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(out.tool_calls[i].name, c.calls[i].name);
    EXPECT_EQ(out.tool_calls[i].arguments, c.calls[i].arguments);
    const std::string id = c.calls[i].id.empty() ? tool_call_id(c.options.id_seed, static_cast<int>(i)) : c.calls[i].id;
    EXPECT_EQ(out.tool_calls[i].id, id);
  }
}

// ---- Cases -----------------------------------------------------------------------------------

// A valid call to get_weather(city="Paris") in each format.
struct Sample {
  F format;
  std::string call;
};

const std::vector<Sample>& samples() {
  static const std::vector<Sample> s = {
      {F::hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
      {F::qwen3_xml, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"},
      {F::llama3_json, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
      {F::mistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
      {F::mistral_args, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"},
      {F::generic, "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]}"},
  };
  return s;
}

const ExpectedCall kParis{"get_weather", "{\"city\":\"Paris\"}"};

// The cases every format shares, built from its sample call.
std::vector<Case> common_cases(const Sample& s) {
  const std::string name = tool_call_format_name(s.format);
  const std::string& v = s.call;
  const bool generic = s.format == F::generic;
  std::vector<Case> cases = {
      {name + " single call", opts(s.format), v, "", "", {kParis}},
      {name + " surrounding whitespace", opts(s.format), "\n  " + v + "\n\n", "", "", {kParis}},
      {name + " unterminated", opts(s.format), v.substr(0, v.size() - 1), v.substr(0, v.size() - 1)},
      {name + " reasoning + call", opts(s.format, true), "<think>\nCheck weather.\n</think>\n\n" + v, "",
       "\nCheck weather.\n", {kParis}},
      {name + " reasoning unterminated", opts(s.format, true), "<think>\nCheck " + v, "", "\nCheck " + v},
      {name + " starts in reasoning", opts(s.format, true, true), "Check.</think>\n" + v, "", "Check.", {kParis}},
      {name + " starts in reasoning, unterminated", opts(s.format, true, true), "Check. " + v, "", "Check. " + v},
      {name + " no tool format", opts(std::nullopt), v, v},
      {name + " no tool format, reasoning", opts(std::nullopt, true), "<think>r</think>" + v, v, "r"},
      {name + " plain text", opts(s.format), "The weather is nice today.\n",
       "The weather is nice today.\n"},
  };
  if (generic) {
    // A generic call is the whole output: text before it, or think tags taken as text, make it content.
    cases.push_back({name + " text before", opts(s.format), "Sure: " + v, "Sure: " + v});
    cases.push_back({name + " think tags without reasoning", opts(s.format), "<think>x</think>" + v,
                     "<think>x</think>" + v});
  } else {
    cases.push_back({name + " text before", opts(s.format), "I'll check the weather.\n\n" + v,
                     "I'll check the weather.", "", {kParis}});
    cases.push_back({name + " think tags without reasoning", opts(s.format), "<think>x</think>" + v,
                     "<think>x</think>", "", {kParis}});
    cases.push_back({name + " parallel", opts(s.format), v + "\n" + v, "", "", {kParis, kParis}});
    cases.push_back({name + " unicode text before", opts(s.format), "Café ☕ — 天気 " + v, "Café ☕ — 天気", "",
                     {kParis}});
  }
  return cases;
}

std::vector<Case> hermes_cases() {
  const auto o = opts(F::hermes);
  return {
      {"hermes two different calls", o,
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
       "\"arguments\": {\"y\": [true, null]}}\n</tool_call>",
       "", "", {{"a", "{\"x\":1}"}, {"b", "{\"y\":[true,null]}"}}},
      {"hermes no whitespace, key order kept", o, "<tool_call>{\"arguments\": {\"z\": 1, \"a\": 2}, \"name\": \"f\"}</tool_call>",
       "", "", {{"f", "{\"z\":1,\"a\":2}"}}},
      {"hermes arguments as a JSON string", o, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": \\\"é\\\"}\"}</tool_call>",
       "", "", {{"f", "{\"x\":\"é\"}"}}},
      {"hermes no arguments", o, "<tool_call>{\"name\": \"ping\"}</tool_call>", "", "", {{"ping", "{}"}}},
      {"hermes bad JSON", o, "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call>",
       "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call>"},
      {"hermes unterminated", o, "Hi\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}",
       "Hi\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}"},
      {"hermes missing name", o, "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>"},
      {"hermes arguments not an object", o, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
       "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>"},
      {"hermes malformed then valid", o,
       "<tool_call>oops</tool_call>\n<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
       "<tool_call>oops</tool_call>", "", {{"f", "{}"}}},
      {"hermes text after a call", o, "<tool_call>{\"name\": \"f\"}</tool_call>\n\nDone.  ", "Done.", "", {{"f", "{}"}}},
      {"hermes marker look-alikes", o, "a < b, <tool and <tool_cal", "a < b, <tool and <tool_cal"},
      {"hermes think tags are content without reasoning", o, "<think>x</think>\n\nHi", "<think>x</think>\n\nHi"},
      {"hermes reasoning without think block", opts(F::hermes, true), "  Hello <think>", "  Hello <think>"},
      {"hermes whitespace only", o, " \n ", " \n "},
  };
}

std::vector<Case> qwen3_xml_cases() {
  const auto o = opts(F::qwen3_xml);
  const std::string write =
      "<tool_call>\n<function=write_file>\n"
      "<parameter=path>\n123\n</parameter>\n"
      "<parameter=content>\n{\"k\": 1}\nline 2\n</parameter>\n"
      "<parameter=mode>\n644\n</parameter>\n"
      "<parameter=ratio>\n0.5\n</parameter>\n"
      "<parameter=force>\ntrue\n</parameter>\n"
      "<parameter=options>\n{\"a\": [1, 2]}\n</parameter>\n"
      "<parameter=tags>\n[\"x\", \"y\"]\n</parameter>\n"
      "<parameter=note>\nnull\n</parameter>\n"
      "<parameter=extra>\n42\n</parameter>\n"
      "<parameter=word>\nhello there\n</parameter>\n"
      "</function>\n</tool_call>";
  return {
      {"qwen3-xml typed values", o, write, "", "",
       {{"write_file",
         "{\"path\":\"123\",\"content\":\"{\\\"k\\\": 1}\\nline 2\",\"mode\":644,\"ratio\":0.5,\"force\":true,"
         "\"options\":{\"a\":[1,2]},\"tags\":[\"x\",\"y\"],\"note\":\"null\",\"extra\":42,\"word\":\"hello there\"}"}}},
      {"qwen3-xml Python spellings and invalid JSON for typed parameters", o,
       "<tool_call>\n<function=write_file>\n<parameter=force>\nFalse\n</parameter>\n<parameter=mode>\nseven\n"
       "</parameter>\n</function>\n</tool_call>",
       "", "", {{"write_file", "{\"force\":false,\"mode\":\"seven\"}"}}},
      {"qwen3-xml multi-line string keeps inner newlines", o,
       "<tool_call>\n<function=write_file>\n<parameter=content>\n\nfirst\n\n</parameter>\n</function>\n</tool_call>", "", "",
       {{"write_file", "{\"content\":\"\\nfirst\\n\"}"}}},
      {"qwen3-xml no parameters", o, "<tool_call>\n<function=ping>\n</function>\n</tool_call>", "", "", {{"ping", "{}"}}},
      {"qwen3-xml missing </parameter>", o,
       "<tool_call>\n<function=write_file>\n<parameter=path>\n/a\n<parameter=mode>\n7\n</function>\n</tool_call>", "", "",
       {{"write_file", "{\"path\":\"/a\",\"mode\":7}"}}},
      {"qwen3-xml unknown tool: JSON when it parses", o,
       "<tool_call>\n<function=other>\n<parameter=n>\n1\n</parameter>\n<parameter=s>\nabc\n</parameter>\n</function>\n</tool_call>",
       "", "", {{"other", "{\"n\":1,\"s\":\"abc\"}"}}},
      {"qwen3-xml missing </function>", o,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>"},
      {"qwen3-xml missing name", o, "<tool_call>\n<function=>\n</function>\n</tool_call>",
       "<tool_call>\n<function=>\n</function>\n</tool_call>"},
      {"qwen3-xml not XML inside", o, "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<tool_call>\n{\"name\": \"f\"}\n</tool_call>"},
      {"qwen3-xml text after </function>", o, "<tool_call>\n<function=ping>\n</function>\nx</tool_call>",
       "<tool_call>\n<function=ping>\n</function>\nx</tool_call>"},
  };
}

std::vector<Case> llama3_cases() {
  const auto o = opts(F::llama3_json);
  return {
      {"llama3 without python tag", o, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", "", {kParis}},
      {"llama3 \"arguments\" key and a \"type\" key", o,
       "{\"type\": \"function\", \"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}", "", "", {kParis}},
      {"llama3 parallel with ';'", o, "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1}}", "",
       "", {{"a", "{}"}, {"b", "{\"x\":1}"}}},
      {"llama3 parallel on lines", o, "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"parameters\": {}}\n", "", "",
       {{"a", "{}"}, {"b", "{}"}}},
      {"llama3 JSON in prose", o, "Use {\"a\": 1} here.", "Use {\"a\": 1} here."},
      {"llama3 call-like JSON followed by text", o, "The object {\"name\": \"x\"} is an example.",
       "The object {\"name\": \"x\"} is an example."},
      {"llama3 text after an otherwise valid call", o, "{\"name\": \"f\", \"parameters\": {}} and more",
       "{\"name\": \"f\", \"parameters\": {}} and more"},
      {"llama3 a later call after rejected text", o,
       "{\"name\": \"a\", \"parameters\": {}} then {\"name\": \"b\", \"parameters\": {}}",
       "{\"name\": \"a\", \"parameters\": {}} then", "", {{"b", "{}"}}},
      {"llama3 braces and escaped quotes in strings", o, "{\"name\": \"f\", \"parameters\": {\"q\": \"say \\\"}\\\" {now\"}}", "",
       "", {{"f", "{\"q\":\"say \\\"}\\\" {now\"}"}}},
      {"llama3 bad JSON", o, "{\"name\": \"f\", \"parameters\": {\"x\": ]}}", "{\"name\": \"f\", \"parameters\": {\"x\": ]}}"},
      {"llama3 missing name", o, "{\"type\": \"function\", \"parameters\": {}}", "{\"type\": \"function\", \"parameters\": {}}"},
      {"llama3 builtin tool syntax", o, "<|python_tag|>brave_search.call(query=\"x\")", "<|python_tag|>brave_search.call(query=\"x\")"},
      {"llama3 braces in code", o, "int main() { return 0; }\n", "int main() { return 0; }\n"},
  };
}

std::vector<Case> mistral_cases() {
  const auto o = opts(F::mistral);
  return {
      {"mistral own ids kept", o,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123XYZ\"}, "
       "{\"name\": \"get_time\", \"arguments\": {}}]",
       "", "", {{"get_weather", "{\"city\":\"Paris\"}", "abc123XYZ"}, {"get_time", "{}"}}},
      {"mistral arguments as a JSON string", o, "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}]", "", "",
       {{"f", "{\"a\":1}"}}},
      {"mistral text before", o, "Sure.[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]", "Sure.", "", {{"f", "{}"}}},
      {"mistral escaped quotes and brackets in strings", o,
       "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"s\": \"a \\\"]}\\\" [b\"}}]", "", "",
       {{"f", "{\"s\":\"a \\\"]}\\\" [b\"}"}}},
      {"mistral bad JSON", o, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]", "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]"},
      {"mistral missing name", o, "[TOOL_CALLS][{\"arguments\": {}}]", "[TOOL_CALLS][{\"arguments\": {}}]"},
      {"mistral empty list", o, "[TOOL_CALLS][]", "[TOOL_CALLS][]"},
      {"mistral not a list", o, "[TOOL_CALLS] hello", "[TOOL_CALLS] hello"},
  };
}

std::vector<Case> mistral_args_cases() {
  const auto o = opts(F::mistral_args);
  return {
      {"mistral-args two calls", o, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}",
       "", "", {kParis, {"get_time", "{\"tz\":\"UTC\"}"}}},
      {"mistral-args call id kept", o, "[TOOL_CALLS]f[CALL_ID]a1b2c3d4e[ARGS]{}", "", "", {{"f", "{}", "a1b2c3d4e"}}},
      {"mistral-args bad JSON", o, "[TOOL_CALLS]f[ARGS]{\"x\": }", "[TOOL_CALLS]f[ARGS]{\"x\": }"},
      {"mistral-args missing name", o, "[TOOL_CALLS][ARGS]{}", "[TOOL_CALLS][ARGS]{}"},
      {"mistral-args arguments not an object", o, "[TOOL_CALLS]f[ARGS][1]", "[TOOL_CALLS]f[ARGS][1]"},
      {"mistral-args no [ARGS]", o, "[TOOL_CALLS]f {}", "[TOOL_CALLS]f {}"},
      {"mistral-args malformed then valid", o, "[TOOL_CALLS]f[ARGS]{]}[TOOL_CALLS]g[ARGS]{}", "[TOOL_CALLS]f[ARGS]{]}", "",
       {{"g", "{}"}}},
  };
}

std::vector<Case> generic_cases() {
  const auto o = opts(F::generic);
  return {
      {"generic parallel", o,
       "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {}}]}", "", "",
       {{"a", "{\"x\":1}"}, {"b", "{}"}}},
      {"generic single tool_call", o, "{\"tool_call\": {\"name\": \"a\", \"arguments\": {}}}", "", "", {{"a", "{}"}}},
      {"generic response", o, " {\"response\": \"Hello \\\"there\\\"\\n\"}\n", "Hello \"there\"\n"},
      {"generic trailing text", o, "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}]} ok",
       "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}]} ok"},
      {"generic bad JSON", o, "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {]}",
       "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {]}"},
      {"generic missing name", o, "{\"tool_calls\": [{\"arguments\": {}}]}", "{\"tool_calls\": [{\"arguments\": {}}]}"},
      {"generic other object", o, "{\"answer\": 42}", "{\"answer\": 42}"},
      {"generic empty", o, "", ""},
  };
}

std::vector<Case> all_cases() {
  std::vector<Case> all;
  for (const Sample& s : samples())
    for (Case& c : common_cases(s)) all.push_back(std::move(c));
  for (auto* table : {hermes_cases, qwen3_xml_cases, llama3_cases, mistral_cases, mistral_args_cases, generic_cases})
    for (Case& c : table()) all.push_back(std::move(c));
  return all;
}

// ---- Tests -----------------------------------------------------------------------------------

void expect_cases_of(F format) {
  for (const Sample& s : samples())
    if (s.format == format)
      for (const Case& c : common_cases(s)) expect_case(c);
}

TEST(ChatOutputParser, Hermes) {
  expect_cases_of(F::hermes);
  for (const Case& c : hermes_cases()) expect_case(c);
}

TEST(ChatOutputParser, Qwen3Xml) {
  expect_cases_of(F::qwen3_xml);
  for (const Case& c : qwen3_xml_cases()) expect_case(c);
}

TEST(ChatOutputParser, Llama3Json) {
  expect_cases_of(F::llama3_json);
  for (const Case& c : llama3_cases()) expect_case(c);
}

TEST(ChatOutputParser, Mistral) {
  expect_cases_of(F::mistral);
  for (const Case& c : mistral_cases()) expect_case(c);
}

TEST(ChatOutputParser, MistralArgs) {
  expect_cases_of(F::mistral_args);
  for (const Case& c : mistral_args_cases()) expect_case(c);
}

TEST(ChatOutputParser, Generic) {
  expect_cases_of(F::generic);
  for (const Case& c : generic_cases()) expect_case(c);
}

TEST(ChatOutputParser, QwenTemplateRenderRoundTrips) {
  // What Qwen3.5's template renders for an assistant turn with reasoning and a call, minus the
  // prompt's "<think>\n" (starts_in_reasoning).
  const std::string text =
      "The user wants the weather.\n</think>\n\nLet me look it up.\n\n<tool_call>\n<function=get_weather>\n"
      "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
  expect_case({"qwen3.5 render", opts(F::qwen3_xml, true, true), text, "Let me look it up.", "The user wants the weather.\n", {kParis}});
}

TEST(ChatOutputParser, CallIds) {
  const std::string a = tool_call_id(7, 0), b = tool_call_id(7, 1), c = tool_call_id(8, 0);
  EXPECT_TRUE(well_formed_id(a)) << a;
  EXPECT_TRUE(well_formed_id(b)) << b;
  EXPECT_TRUE(well_formed_id(c)) << c;
  EXPECT_EQ(a, tool_call_id(7, 0));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  ChatOutputOptions o = opts(F::hermes);
  o.id_seed = 7;
  const ChatOutput out = parse_chat_output(
      "<tool_call>{\"name\": \"f\"}</tool_call><tool_call>{\"name\": \"g\", \"id\": \"mine\"}</tool_call>", o);
  ASSERT_EQ(out.tool_calls.size(), 2u);
  EXPECT_EQ(out.tool_calls[0].id, a);
  EXPECT_EQ(out.tool_calls[1].id, b);  // only Mistral formats keep a call's own id
}

TEST(ChatOutputParser, StreamingInvariant) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.label + " | " + c.text);
    expect_stream_matches(c.text, c.options, 8);
  }
}

TEST(ChatOutputParser, StreamEmitsEarly) {
  ChatOutputStream s(opts(F::hermes, true));
  EXPECT_EQ(s.feed("<think>").reasoning_content, "");
  EXPECT_EQ(s.feed("Plan it").reasoning_content, "Plan it");
  EXPECT_TRUE(s.feed("</thi").empty());  // may be the closing tag
  EXPECT_EQ(s.feed("nk>\n\nHello").content, "Hello");
  EXPECT_EQ(s.feed(" world ").content, " world");  // trailing whitespace waits: a call may follow
  EXPECT_TRUE(s.feed("<tool").empty());
  EXPECT_TRUE(s.feed("_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}").empty());  // incomplete call
  const ChatOutputDelta call = s.feed("</tool_call>");
  ASSERT_EQ(call.tool_calls.size(), 2u);
  EXPECT_EQ(call.tool_calls[0].index, 0);
  EXPECT_EQ(call.tool_calls[0].name, "f");
  EXPECT_TRUE(well_formed_id(call.tool_calls[0].id));
  EXPECT_EQ(call.tool_calls[0].arguments, "");
  EXPECT_EQ(call.tool_calls[1].index, 0);
  EXPECT_EQ(call.tool_calls[1].arguments, "{\"a\":1}");
  EXPECT_EQ(call.content, "");  // the whitespace before the call is dropped
  EXPECT_TRUE(s.finish().empty());

  ChatOutputStream llama(opts(F::llama3_json));
  EXPECT_TRUE(llama.feed("{").empty());
  EXPECT_EQ(llama.feed("\"a").content, "{\"a");  // not "name"/"type": released at once

  ChatOutputStream plain(opts(std::nullopt));
  EXPECT_EQ(plain.feed("<tool_call> ").content, "<tool_call> ");  // no tools: nothing held
}

TEST(ChatOutputParser, DeeplyNestedArgumentsAreContent) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::vector<std::pair<F, std::string>> texts = {
      {F::hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + deep + "}}</tool_call>"},
      {F::llama3_json, "{\"name\": \"f\", \"parameters\": {\"a\": " + deep + "}}"},
      {F::mistral, "[TOOL_CALLS]" + deep},
      {F::qwen3_xml, "<tool_call>\n<function=f>\n<parameter=a>\n" + deep + "\n</parameter>\n</function>\n</tool_call>"},
  };
  for (const auto& [format, text] : texts) {
    SCOPED_TRACE(tool_call_format_name(format));
    const ChatOutput out = parse_chat_output(text, opts(format));
    if (format == F::qwen3_xml) {  // an unknown parameter that does not parse stays a string
      ASSERT_EQ(out.tool_calls.size(), 1u);
      EXPECT_EQ(out.tool_calls[0].arguments, "{\"a\":\"" + deep + "\"}");
    } else {
      EXPECT_TRUE(out.tool_calls.empty());
      EXPECT_EQ(out.content, text);
    }
  }
}

// Seeded soups of markers, JSON fragments, whole calls, text and whitespace; and raw bytes.
std::string soup(std::mt19937& rng, bool bytes) {
  static const std::vector<std::string> words = {
      "<tool_call>", "</tool_call>", "<think>", "</think>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|python_tag|>",
      "<function=f>", "</function>", "<parameter=city>", "</parameter>", "{", "}", "[", "]", "\"", "\\", ":", ",", ";",
      "\"name\"", "\"arguments\"", "\"parameters\"", "\"f\"", "\"tool_calls\"", "\"response\"", "1", "true", " ", "\n",
      "\n\n", "abc", "é", "☕", "<", "<tool", "[TOOL", "{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
      "{\"name\": \"g\", \"parameters\": {}}", "get_weather", "Paris", "[{\"name\": \"h\", \"arguments\": {}}]"};
  std::string out;
  const int n = std::uniform_int_distribution<int>(0, 40)(rng);
  for (int i = 0; i < n; ++i) {
    if (bytes) {
      out += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    } else {
      for (const Sample& s : samples())  // now and then a whole valid call
        if (std::uniform_int_distribution<int>(0, 150)(rng) == 0) out += s.call;
      out += words[std::uniform_int_distribution<size_t>(0, words.size() - 1)(rng)];
    }
  }
  return out;
}

std::string without_space(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

bool is_subsequence(std::string_view part, std::string_view whole) {
  size_t j = 0;
  for (char c : whole)
    if (j < part.size() && part[j] == c) ++j;
  return j == part.size();
}

// Without calls nothing is dropped but the think tags and the whitespace right after </think>.
bool think_split_explains(std::string_view text, const ChatOutput& out, const ChatOutputOptions& o) {
  if (!o.reasoning) return out.reasoning_content.empty() && out.content == text;
  std::string_view t = text;
  if (!o.starts_in_reasoning) {
    size_t i = 0;
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i])) && t[i] != '\0') ++i;
    if (t.substr(i).rfind("<think>", 0) != 0) return out.reasoning_content.empty() && out.content == text;
    t.remove_prefix(i + 7);
  }
  if (t.rfind(out.reasoning_content, 0) != 0) return false;
  t.remove_prefix(out.reasoning_content.size());
  if (t.empty()) return out.content.empty();
  if (t.rfind("</think>", 0) != 0) return false;
  t.remove_prefix(8);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  return t == out.content;
}

TEST(ChatOutputParser, RandomSoupLosesNothing) {
  std::vector<std::optional<F>> formats = {std::nullopt};
  for (const Sample& s : samples()) formats.push_back(s.format);
  int with_calls = 0, total = 0;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    for (const bool bytes : {false, true}) {
      std::mt19937 rng(seed * 2 + bytes);
      const std::string text = soup(rng, bytes);
      for (const std::optional<F>& format : formats) {
        for (const int mode : {0, 1, 2}) {
          const ChatOutputOptions o = opts(format, mode > 0, mode == 2);
          SCOPED_TRACE("seed " + std::to_string(seed) + (bytes ? " bytes" : " soup") + " format " +
                       (format ? tool_call_format_name(*format) : "none") + " mode " + std::to_string(mode) + " | " + text);
          ChatOutput out;
          ASSERT_NO_THROW(out = parse_chat_output(text, o));
          ASSERT_NO_THROW(expect_stream_matches(text, o, 2, bytes));
          ++total;
          if (out.tool_calls.empty()) {
            if (format != F::generic || text.find("response") == std::string::npos) {
              EXPECT_TRUE(think_split_explains(text, out, o))
                  << "content: " << out.content << "\nreasoning: " << out.reasoning_content;
            }
            continue;
          }
          ++with_calls;
          EXPECT_TRUE(format.has_value());
          EXPECT_TRUE(is_subsequence(without_space(out.reasoning_content + out.content), without_space(text)));
          EXPECT_LE(out.reasoning_content.size() + out.content.size(), text.size());
          for (const ParsedToolCall& call : out.tool_calls) {
            EXPECT_NE(text.find(call.name), std::string::npos) << call.name;
            const Json args = Json::parse(call.arguments, nullptr, false);
            EXPECT_TRUE(args.is_object()) << call.arguments;
          }
        }
      }
    }
  }
  EXPECT_GT(with_calls, 20) << "the soup should produce some calls, of " << total;
}

}  // namespace
}  // namespace nucleus::server
