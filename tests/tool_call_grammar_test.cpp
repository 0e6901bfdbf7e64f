// Tool-call grammars (server/tool_call_grammar.h) and the GBNF composition helpers under them
// (structured/gbnf_compose.h): renaming rules keeps a grammar's language, "text without a literal"
// agrees with std::string::find on random texts, and for every tool-call format the grammar
// accepts the calls its family writes and refuses wrong names, wrong arguments and stray text.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "server/tool_call_format.h"
#include "server/tool_call_grammar.h"
#include "structured/constraint.h"
#include "structured/gbnf_compose.h"
#include "structured/grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/json_schema_to_gbnf.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

using ordered_json = nlohmann::ordered_json;
using server::ToolCallFormat;
using server::ToolCallGrammarOptions;

// Throws (and so fails the test) with the grammar text when it does not parse.
Grammar parse_or_fail(const std::string& gbnf, std::string_view root = "root") {
  try {
    return parse_gbnf(gbnf, root);
  } catch (const Error& e) {
    ADD_FAILURE() << "grammar does not parse: " << e.what() << "\n" << gbnf;
    throw;
  }
}

// ---- prefix_gbnf_rules ------------------------------------------------------------------------

TEST(GbnfCompose, PrefixRenamesRulesAndKeepsLiteralsClassesComments) {
  const std::string grammar =
      "root ::= item (\",\" item)* # root item \"comment\" [x]\n"
      "item ::= \"root \\\" item\" [a-z\\]root] item-2{2,3} | [^\"] x_y\n"
      "item-2 ::= \"#\" x_y  # ::= item\n"
      "x_y ::= \"[\" | \"{1}\" | [{}#\"]\n";
  const std::string expected =
      "p-root ::= p-item (\",\" p-item)* # root item \"comment\" [x]\n"
      "p-item ::= \"root \\\" item\" [a-z\\]root] p-item-2{2,3} | [^\"] p-x_y\n"
      "p-item-2 ::= \"#\" p-x_y  # ::= item\n"
      "p-x_y ::= \"[\" | \"{1}\" | [{}#\"]\n";
  EXPECT_EQ(prefix_gbnf_rules(grammar, "p-"), expected);
  EXPECT_EQ(prefix_gbnf_rules(grammar, ""), grammar);

  const Grammar original = parse_or_fail(grammar);
  const Grammar renamed = parse_or_fail(prefix_gbnf_rules(grammar, "p-"), "p-root");
  for (const std::string s : {"root \" item]#[#{1}", "root \" itemq#[#{1},\"a[", "root \" itemq#\"#}#[,a#",
                              "\"[", "x", "root \" item]#[", ""})
    EXPECT_EQ(grammar_matches(original, s), grammar_matches(renamed, s)) << s;
  EXPECT_TRUE(grammar_matches(renamed, "root \" item]#[#{1}"));
  EXPECT_TRUE(grammar_matches(renamed, "root \" itemq#\"#}#[,a#"));
  EXPECT_FALSE(grammar_matches(renamed, "root \" item]#[#{1},"));

  EXPECT_THROW(prefix_gbnf_rules(grammar, "bad prefix"), Error);
}

// Each shared GBNF grammar, renamed, accepts and rejects exactly the shared test strings the
// original accepts and rejects.
TEST(GbnfCompose, PrefixKeepsTheLanguageOfTheSharedGrammars) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string dir = test::shared_path("structured/gbnf");
  int grammars = 0, strings = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gbnf") continue;
    SCOPED_TRACE(entry.path().string());
    const std::string text = test::read_file(entry.path().string());
    const Grammar original = parse_or_fail(text);
    const Grammar renamed = parse_or_fail(prefix_gbnf_rules(text, "shared-x-"), "shared-x-root");
    ++grammars;
    for (const char* kind : {".accept.txt", ".reject.txt"}) {
      const std::filesystem::path cases = entry.path().parent_path() / (entry.path().stem().string() + kind);
      if (!std::filesystem::exists(cases)) continue;
      std::istringstream lines(test::read_file(cases.string()));
      std::string line;
      while (std::getline(lines, line)) {
        if (line.empty()) continue;
        const std::string s = nlohmann::json::parse(line).get<std::string>();
        const bool accepted = grammar_matches(original, s);
        EXPECT_EQ(accepted, grammar_matches(renamed, s)) << s;
        EXPECT_EQ(grammar_prefix_length(original, s), grammar_prefix_length(renamed, s)) << s;
        if (std::string(kind) == ".accept.txt") {
          EXPECT_TRUE(accepted) << s;
        }
        ++strings;
      }
    }
  }
  EXPECT_GE(grammars, 5);
  EXPECT_GE(strings, 50);
}

// Generated JSON Schema grammars, renamed and combined: each keeps its language, and a root that
// chooses between two of them accepts their union.
TEST(GbnfCompose, PrefixKeepsTheLanguageOfJsonSchemaGrammarsAndCombinesThem) {
  struct Case {
    const char* schema;
    std::vector<std::string> texts;
  };
  const std::vector<Case> cases = {
      {R"({"type":"object","properties":{"location":{"type":"string"},"unit":{"enum":["c","f"]},
           "n":{"type":"integer","minimum":1,"maximum":30}},"required":["location"]})",
       {R"({"location": "Paris"})", R"({"location":"x","unit":"c","n":30})", R"({"location":"x","n":31})",
        R"({"unit":"c"})", R"({"location": "Paris", "extra": [1, {"a": null}]})", "{}", "[]"}},
      {R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"number"},"next":{"$ref":"#/$defs/node"}},
           "required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"})",
       {R"({"v":1})", R"({"v":1,"next":{"v":2.5,"next":{"v":-3}}})", R"({"v":1,"next":{}})", R"({"v":"1"})"}},
      {R"({"type":"string","pattern":"^[a-z]+-[0-9]{2}$"})", {R"("ab-12")", R"("ab-1")", R"("AB-12")", "\"\""}},
      {R"({"type":"array","items":{"type":"string","format":"date"},"minItems":1,"maxItems":2})",
       {R"(["2024-02-29"])", R"(["2023-02-29"])", "[]", R"(["2024-01-01", "2024-01-02", "2024-01-03"])"}},
  };
  std::string combined = "root ::= a-root | b-root\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].schema);
    const std::string gbnf = json_schema_text_to_gbnf(cases[i].schema);
    const Grammar original = parse_or_fail(gbnf);
    const Grammar renamed = parse_or_fail(prefix_gbnf_rules(gbnf, "t7-"), "t7-root");
    for (const std::string& s : cases[i].texts) EXPECT_EQ(grammar_matches(original, s), grammar_matches(renamed, s)) << s;
    if (i < 2) combined += prefix_gbnf_rules(gbnf, i == 0 ? "a-" : "b-");
  }
  const Grammar first = parse_or_fail(json_schema_text_to_gbnf(cases[0].schema));
  const Grammar second = parse_or_fail(json_schema_text_to_gbnf(cases[1].schema));
  const Grammar both = parse_or_fail(combined);
  for (size_t i = 0; i < 2; ++i)
    for (const std::string& s : cases[i].texts)
      EXPECT_EQ(grammar_matches(both, s), grammar_matches(first, s) || grammar_matches(second, s)) << s;
}

// ---- gbnf_literal -----------------------------------------------------------------------------

TEST(GbnfCompose, LiteralMatchesExactlyItsText) {
  for (const std::string& s : {std::string("plain"), std::string("\"quoted\" \\ back"), std::string("<tool_call>\n{\"name\": "),
                              std::string("tab\there\r\n"), std::string("[x] # not a comment {1}"),
                              std::string("é 日本 🙂"), std::string("\x01\x7f", 2), std::string("")}) {
    const Grammar g = parse_or_fail("root ::= " + gbnf_literal(s) + "\n");
    EXPECT_TRUE(grammar_matches(g, s)) << s;
    EXPECT_FALSE(grammar_matches(g, s + "x")) << s;
    if (!s.empty()) {
      EXPECT_FALSE(grammar_matches(g, s.substr(0, s.size() - 1))) << s;
    }
  }
}

// ---- gbnf_text_without ------------------------------------------------------------------------

// Random texts over `alphabet` (UTF-8 strings, one character each), mixed with pieces of
// `literal` so that texts containing it, and ending in its prefixes, are frequent.
std::vector<std::string> random_texts(const std::vector<std::string>& alphabet, const std::string& literal,
                                      uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string s;
    const int pieces = static_cast<int>(rng() % 12);
    for (int p = 0; p < pieces; ++p) {
      if (rng() % 3 == 0) {
        // A prefix of the literal (whole code points: the literals here are ASCII or cut at a boundary).
        size_t k = rng() % (literal.size() + 1);
        while (k < literal.size() && (static_cast<unsigned char>(literal[k]) & 0xC0) == 0x80) ++k;
        s += literal.substr(0, k);
      } else {
        s += alphabet[rng() % alphabet.size()];
      }
    }
    out.push_back(s);
  }
  return out;
}

void check_text_without(const std::string& literal, const std::vector<std::string>& alphabet, uint32_t seed) {
  SCOPED_TRACE("literal: " + literal);
  const std::string rules = gbnf_text_without(literal, "free");
  const Grammar alone = parse_or_fail("root ::= free\n" + rules);
  const Grammar closed = parse_or_fail("root ::= free " + gbnf_literal(literal) + "\n" + rules);
  int containing = 0, not_containing = 0;
  for (const std::string& s : random_texts(alphabet, literal, seed, 4000)) {
    const bool has_literal = s.find(literal) != std::string::npos;
    const std::string closed_text = s + literal;
    // (a) no occurrence, (b) the literal written next is its first occurrence.
    const bool expected = !has_literal && closed_text.find(literal) == s.size();
    EXPECT_EQ(grammar_matches(alone, s), expected) << s;
    EXPECT_EQ(grammar_matches(closed, closed_text), closed_text.find(literal) == s.size()) << closed_text;
    (has_literal ? containing : not_containing) += 1;
  }
  EXPECT_GT(containing, 300);
  EXPECT_GT(not_containing, 300);
}

TEST(GbnfCompose, TextWithoutAgreesWithFindOnRandomTexts) {
  // "</think>" has no border: the language is exactly the texts not containing it.
  check_text_without("</think>", {"<", "/", "t", "h", "i", "n", "k", ">", "a", "é"}, 1);
  check_text_without("\n</parameter>", {"\n", "<", "/", "p", "a", "r", "m", "e", "t", ">", "x", "日"}, 2);
  // Code points, not bytes: a literal with multi-byte characters.
  check_text_without("é</é>", {"é", "<", "/", ">", "e", "\xc3\xa8", "a"}, 3);
  // Bordered literals: (b) excludes texts the literal written next would complete early.
  check_text_without("abab", {"a", "b", "c"}, 4);
  check_text_without("aab", {"a", "b"}, 5);
  check_text_without("<<", {"<", "a"}, 6);
}

TEST(GbnfCompose, TextWithoutThink) {
  const std::string rules = gbnf_text_without("</think>", "t");
  const Grammar g = parse_or_fail("root ::= t\n" + rules);
  for (const std::string s : {"", "abc", "<", "</", "</think", "<</think", "<<//think>", "</thinK>", "é</thin",
                              "日本語 🙂", "</think >", "think>", "<think>", "</</t</th</thi</thin</think",
                              "line\n</thin\nk>"})
    EXPECT_TRUE(grammar_matches(g, s)) << s;
  for (const std::string s : {"</think>", "a</think>b", "<</think>", "</think></think>", "é</think>é"})
    EXPECT_FALSE(grammar_matches(g, s)) << s;
  // Free text then the closing tag: the tag ends the text at its first occurrence.
  const Grammar closed = parse_or_fail("root ::= t \"</think>\" \"!\"\n" + rules);
  EXPECT_TRUE(grammar_matches(closed, "<</thin</think>!"));
  EXPECT_FALSE(grammar_matches(closed, "a</think>b</think>!"));
  // The bordered "abab": "ab" alone is excluded, since "ab" + "abab" contains "abab" at 0.
  const Grammar bordered = parse_or_fail("root ::= u\n" + gbnf_text_without("abab", "u"));
  EXPECT_FALSE(grammar_matches(bordered, "ab"));
  EXPECT_FALSE(grammar_matches(bordered, "cab"));
  EXPECT_TRUE(grammar_matches(bordered, "aba"));
  EXPECT_TRUE(grammar_matches(bordered, "abc"));
}

// Right-linear rules: the matcher's stacks stay shallow however long the text.
TEST(GbnfCompose, TextWithoutKeepsTheMatcherStateSmall) {
  auto grammar = std::make_shared<const Grammar>(parse_or_fail("root ::= t \"</think>\"\n" + gbnf_text_without("</think>", "t")));
  auto automaton = std::make_shared<GrammarAutomaton>(grammar);
  GrammarMatcher matcher(automaton);
  std::string text;
  for (int i = 0; i < 2000; ++i) text += (i % 7 == 0) ? "</thin" : (i % 5 == 0 ? "é" : "ab<");
  ASSERT_TRUE(matcher.accept(text));
  const size_t stacks = matcher.state().size(), nodes = automaton->num_nodes();
  EXPECT_LE(stacks, 32u);  // one per first byte of the alternatives, not per character read
  ASSERT_TRUE(matcher.accept(text));
  EXPECT_EQ(matcher.state().size(), stacks);
  EXPECT_EQ(automaton->num_nodes(), nodes);  // the same stacks again: nothing grows
  ASSERT_TRUE(matcher.accept("</think>"));
  EXPECT_TRUE(matcher.accepting());
}

TEST(GbnfCompose, TextWithoutErrors) {
  EXPECT_THROW(gbnf_text_without("", "t"), Error);
  EXPECT_THROW(gbnf_text_without("x", "bad name"), Error);
  EXPECT_THROW(gbnf_text_without("x", ""), Error);
  EXPECT_THROW(gbnf_text_without("\xc3", "t"), Error);
}

// ---- tool_call_gbnf ---------------------------------------------------------------------------

const ordered_json& test_tools() {
  static const ordered_json tools = ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["location"]}}},
    {"type": "function", "function": {"name": "send_email",
      "parameters": {"type": "object", "properties": {
        "to": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "body": {"type": "string"}},
        "required": ["to", "body"]}}},
    {"type": "function", "function": {"name": "ping", "description": "No parameters"}}
  ])");
  return tools;
}

struct Call {
  std::string name;
  std::string args;  // the JSON text of the arguments
};

// The text a model of the format writes for `calls` (as its chat template renders them).
std::string render(ToolCallFormat format, const std::vector<Call>& calls) {
  std::string out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    switch (format) {
      case ToolCallFormat::hermes:
        out += (i ? "\n" : "") + std::string("<tool_call>\n{\"name\": \"") + c.name + "\", \"arguments\": " + c.args + "}\n</tool_call>";
        break;
      case ToolCallFormat::qwen3_xml: {
        out += (i ? "\n" : "") + std::string("<tool_call>\n<function=") + c.name + ">\n";
        const ordered_json args = ordered_json::parse(c.args);
        for (const auto& [key, value] : args.items())
          out += "<parameter=" + key + ">\n" + (value.is_string() ? value.get<std::string>() : value.dump()) + "\n</parameter>\n";
        out += "</function>\n</tool_call>";
        break;
      }
      case ToolCallFormat::llama3_json:
        out += "{\"name\": \"" + c.name + "\", \"parameters\": " + c.args + "}";
        break;
      case ToolCallFormat::mistral:
        out += (i ? ", " : "[TOOL_CALLS][") + std::string("{\"name\": \"") + c.name + "\", \"arguments\": " + c.args + "}";
        if (i + 1 == calls.size()) out += "]";
        break;
      case ToolCallFormat::mistral_args:
        out += "[TOOL_CALLS]" + c.name + "[ARGS]" + c.args;
        break;
      case ToolCallFormat::generic:
        out += (i ? ", " : "{\"tool_calls\": [") + std::string("{\"name\": \"") + c.name + "\", \"arguments\": " + c.args + "}";
        if (i + 1 == calls.size()) out += "]}";
        break;
    }
  }
  return out;
}

const std::vector<ToolCallFormat> kFormats = {ToolCallFormat::hermes,  ToolCallFormat::qwen3_xml,
                                              ToolCallFormat::llama3_json, ToolCallFormat::mistral,
                                              ToolCallFormat::mistral_args, ToolCallFormat::generic};

Grammar tool_grammar(ToolCallGrammarOptions options) {
  if (options.tools.is_null()) options.tools = test_tools();
  return parse_or_fail(server::tool_call_gbnf(options));
}

// Every text the grammar accepts starts with the trigger: byte by byte along the trigger, the
// trigger's next byte is the only one the grammar can take.
void expect_forced_trigger(const Grammar& grammar, const std::string& trigger) {
  auto automaton = std::make_shared<GrammarAutomaton>(std::make_shared<const Grammar>(grammar));
  GrammarMatcher matcher(automaton);
  for (char c : trigger) {
    EXPECT_FALSE(matcher.accepting());
    for (int b = 0; b < 256; ++b)
      EXPECT_EQ(automaton->can_take(matcher.state(), static_cast<uint8_t>(b)), b == static_cast<unsigned char>(c))
          << "byte " << b << " after " << matcher.num_accepted() << " bytes of " << trigger;
    ASSERT_TRUE(matcher.accept(std::string_view(&c, 1)));
  }
}

const Call kWeather{"get_weather", R"({"location": "Paris", "unit": "celsius"})"};
const Call kWeatherDays{"get_weather", R"({"location": "São Paulo", "days": 3})"};
const Call kEmail{"send_email", R"({"to": ["a@example.com", "b@example.com"], "body": "Hi,\nsee you </parameter> <tool_call>"})"};
const Call kPing{"ping", "{}"};

TEST(ToolCallGrammar, AcceptsTheCallsOfEachFormat) {
  for (ToolCallFormat format : kFormats) {
    SCOPED_TRACE(server::tool_call_format_name(format));
    ToolCallGrammarOptions options;
    options.format = format;
    const Grammar g = tool_grammar(options);
    const std::string trigger = server::tool_call_trigger(format);
    expect_forced_trigger(g, trigger);
    for (const Call& call : {kWeather, kWeatherDays, kEmail, kPing}) {
      const std::string text = render(format, {call});
      EXPECT_TRUE(grammar_matches(g, text)) << text;
      EXPECT_EQ(text.rfind(trigger, 0), 0u) << text;
      // Nothing before the call, nothing after it.
      EXPECT_FALSE(grammar_matches(g, "Sure! " + text)) << text;
      EXPECT_FALSE(grammar_matches(g, " " + text)) << text;
      EXPECT_FALSE(grammar_matches(g, "\n" + text)) << text;
      EXPECT_FALSE(grammar_matches(g, text + "x")) << text;
      EXPECT_EQ(grammar_prefix_length(g, "Sure! " + text), 0u);
    }
  }
}

TEST(ToolCallGrammar, ExactShapes) {
  auto matches = [](ToolCallFormat format, const std::string& text) {
    ToolCallGrammarOptions options;
    options.format = format;
    return grammar_matches(tool_grammar(options), text);
  };
  EXPECT_TRUE(matches(ToolCallFormat::hermes,
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(matches(ToolCallFormat::qwen3_xml,
                      "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n"
                      "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(matches(ToolCallFormat::llama3_json, "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}"));
  EXPECT_TRUE(matches(ToolCallFormat::mistral,
                      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}]"));
  EXPECT_TRUE(matches(ToolCallFormat::mistral_args, "[TOOL_CALLS]get_weather[ARGS]{\"location\": \"Paris\"}"));
  EXPECT_TRUE(matches(ToolCallFormat::generic,
                      "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}]}"));
  // The arguments' whitespace is json_schema_to_gbnf's: compact and spaced both go.
  EXPECT_TRUE(matches(ToolCallFormat::hermes,
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\":\"Paris\",\"days\":2}}\n</tool_call>"));
  // The frame is exact: other key names, or a missing newline, are refused.
  EXPECT_FALSE(matches(ToolCallFormat::hermes,
                       "<tool_call>\n{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(matches(ToolCallFormat::hermes,
                       "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}</tool_call>"));
  EXPECT_FALSE(matches(ToolCallFormat::llama3_json,
                       "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}"));
  EXPECT_FALSE(matches(ToolCallFormat::mistral,
                       "[TOOL_CALLS]{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}"));
  EXPECT_FALSE(matches(ToolCallFormat::generic, "{\"tool_calls\": []}"));
  EXPECT_FALSE(matches(ToolCallFormat::mistral, "[TOOL_CALLS][]"));
}

TEST(ToolCallGrammar, ParallelCalls) {
  for (ToolCallFormat format : kFormats) {
    SCOPED_TRACE(server::tool_call_format_name(format));
    ToolCallGrammarOptions options;
    options.format = format;
    const Grammar parallel = tool_grammar(options);
    options.parallel = false;
    const Grammar single = tool_grammar(options);
    const std::string two = render(format, {kWeather, kPing});
    const std::string three = render(format, {kEmail, kWeatherDays, kWeather});
    // Llama 3.1 writes one call per message (its template refuses several): never parallel.
    const bool can_be_parallel = format != ToolCallFormat::llama3_json;
    EXPECT_EQ(grammar_matches(parallel, two), can_be_parallel) << two;
    EXPECT_EQ(grammar_matches(parallel, three), can_be_parallel) << three;
    EXPECT_FALSE(grammar_matches(single, two)) << two;
    EXPECT_FALSE(grammar_matches(single, three)) << three;
    EXPECT_TRUE(grammar_matches(single, render(format, {kEmail})));
  }
  // The separators are the ones the templates write.
  ToolCallGrammarOptions options;
  options.format = ToolCallFormat::hermes;
  EXPECT_FALSE(grammar_matches(tool_grammar(options), render(ToolCallFormat::hermes, {kPing}) + render(ToolCallFormat::hermes, {kPing})));
  EXPECT_FALSE(grammar_matches(tool_grammar(options),
                               render(ToolCallFormat::hermes, {kPing}) + "\n\n" + render(ToolCallFormat::hermes, {kPing})));
  options.format = ToolCallFormat::mistral;
  EXPECT_FALSE(grammar_matches(tool_grammar(options), "[TOOL_CALLS][{\"name\": \"ping\", \"arguments\": {}},{\"name\": \"ping\", \"arguments\": {}}]"));
}

TEST(ToolCallGrammar, RefusesWrongNamesAndArguments) {
  const std::vector<Call> bad = {
      {"get_wether", R"({"location": "Paris"})"},                      // no such tool
      {"get_weather2", R"({"location": "Paris"})"},                    // a longer name
      {"get", R"({"location": "Paris"})"},                             // a prefix of a name
      {"get_weather", R"({"unit": "celsius"})"},                       // required location missing
      {"get_weather", R"({"location": "Paris", "days": "soon"})"},     // days: not an integer
      {"get_weather", R"({"location": "Paris", "days": 15})"},         // days: above the maximum
      {"get_weather", R"({"location": "Paris", "unit": "kelvin"})"},   // unit: not in the enum
      {"send_email", R"({"to": "a@example.com", "body": "x"})"},       // to: not an array
      {"send_email", R"({"to": [], "body": "x"})"},                    // to: below minItems
      {"send_email", R"({"to": ["a@example.com"]})"},                  // body missing
  };
  for (ToolCallFormat format : kFormats) {
    SCOPED_TRACE(server::tool_call_format_name(format));
    ToolCallGrammarOptions options;
    options.format = format;
    const Grammar g = tool_grammar(options);
    for (const Call& call : bad) EXPECT_FALSE(grammar_matches(g, render(format, {call}))) << render(format, {call});
    // A good call followed by a bad one.
    if (format != ToolCallFormat::llama3_json) {
      EXPECT_FALSE(grammar_matches(g, render(format, {kWeather, bad[3]})));
    }
    // JSON formats: the arguments must be an object, even for a tool without parameters.
    if (format != ToolCallFormat::qwen3_xml) {
      EXPECT_FALSE(grammar_matches(g, render(format, {{"ping", "[]"}})));
      EXPECT_FALSE(grammar_matches(g, render(format, {{"ping", "null"}})));
      EXPECT_TRUE(grammar_matches(g, render(format, {{"ping", R"({"anything": [1, {"x": null}]})"}})));
    }
  }
}

TEST(ToolCallGrammar, NamedFunctionRestrictsTheName) {
  for (ToolCallFormat format : kFormats) {
    SCOPED_TRACE(server::tool_call_format_name(format));
    ToolCallGrammarOptions options;
    options.format = format;
    options.function = "send_email";
    const Grammar g = tool_grammar(options);
    EXPECT_TRUE(grammar_matches(g, render(format, {kEmail})));
    EXPECT_FALSE(grammar_matches(g, render(format, {kWeather})));
    EXPECT_FALSE(grammar_matches(g, render(format, {kPing})));
    if (format != ToolCallFormat::llama3_json) {
      EXPECT_TRUE(grammar_matches(g, render(format, {kEmail, kEmail})));
      EXPECT_FALSE(grammar_matches(g, render(format, {kEmail, kPing})));
    }
    expect_forced_trigger(g, server::tool_call_trigger(format));
  }
}

TEST(ToolCallGrammar, StrictModeRefusesExtraProperties) {
  const Call extra{"get_weather", R"({"location": "Paris", "when": "today"})"};
  for (ToolCallFormat format : kFormats) {
    SCOPED_TRACE(server::tool_call_format_name(format));
    ToolCallGrammarOptions options;
    options.format = format;
    const bool json_format = format != ToolCallFormat::qwen3_xml;  // qwen3-xml writes declared parameters only
    EXPECT_EQ(grammar_matches(tool_grammar(options), render(format, {extra})), json_format);
    options.strict = true;
    const Grammar strict = tool_grammar(options);
    EXPECT_FALSE(grammar_matches(strict, render(format, {extra})));
    EXPECT_TRUE(grammar_matches(strict, render(format, {kWeather})));
    EXPECT_TRUE(grammar_matches(strict, render(format, {kPing})));
    EXPECT_FALSE(grammar_matches(strict, render(format, {{"ping", R"({"x": 1})"}})));
  }
  // A tool's own "strict": true.
  ordered_json tools = test_tools();
  tools[0]["function"]["strict"] = true;
  ToolCallGrammarOptions options;
  options.format = ToolCallFormat::hermes;
  options.tools = tools;
  EXPECT_FALSE(grammar_matches(tool_grammar(options), render(ToolCallFormat::hermes, {extra})));
}

TEST(ToolCallGrammar, Qwen3XmlParameters) {
  ToolCallGrammarOptions options;
  options.format = ToolCallFormat::qwen3_xml;
  const Grammar g = tool_grammar(options);
  auto call = [](const std::string& name, const std::string& params) {
    return "<tool_call>\n<function=" + name + ">\n" + params + "</function>\n</tool_call>";
  };
  auto param = [](const std::string& name, const std::string& value) {
    return "<parameter=" + name + ">\n" + value + "\n</parameter>\n";
  };
  // String values raw: any text without "\n</parameter>", multi-line, empty, markup-like.
  for (const std::string value : {"Paris", "", "New\nYork", "a </parameter> b", "\n", "<parameter=x>", "\"quoted\"", "日本"})
    EXPECT_TRUE(grammar_matches(g, call("get_weather", param("location", value)))) << value;
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("location", "a\n</parameter>\nb"))));
  // Optional parameters may be left out; the schema's order is kept.
  EXPECT_TRUE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("unit", "celsius") + param("days", "14"))));
  EXPECT_TRUE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("days", "1"))));
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("unit", "celsius") + param("location", "Paris"))));
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("location", "Lyon"))));
  // Enum strings raw and verbatim; other types as JSON.
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("unit", "\"celsius\""))));
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("unit", "celsiu"))));
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("days", "\"3\""))));
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("days", "3.5"))));
  EXPECT_TRUE(grammar_matches(g, call("send_email", param("to", "[\"a@b.c\"]") + param("body", "x"))));
  EXPECT_FALSE(grammar_matches(g, call("send_email", param("to", "a@b.c") + param("body", "x"))));
  // Undeclared parameters are refused; a tool without parameters takes any, with raw values.
  EXPECT_FALSE(grammar_matches(g, call("get_weather", param("location", "Paris") + param("extra", "1"))));
  EXPECT_TRUE(grammar_matches(g, call("ping", "")));
  EXPECT_TRUE(grammar_matches(g, call("ping", param("x", "1") + param("y z", "two\nlines"))));
  EXPECT_FALSE(grammar_matches(g, call("ping", param("x>", "1"))));
  options.strict = true;
  EXPECT_FALSE(grammar_matches(tool_grammar(options), call("ping", param("x", "1"))));
  EXPECT_TRUE(grammar_matches(tool_grammar(options), call("ping", "")));
}

TEST(ToolCallGrammar, Qwen3XmlDefinitionsAndReferences) {
  ToolCallGrammarOptions options;
  options.format = ToolCallFormat::qwen3_xml;
  options.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "draw",
    "parameters": {"type": "object",
      "$defs": {"Color": {"type": "string", "enum": ["red", "blue"]},
                "Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                          "required": ["x", "y"], "additionalProperties": false}},
      "properties": {"color": {"$ref": "#/$defs/Color"}, "at": {"$ref": "#/$defs/Point"},
                     "label": {"type": ["string", "null"]}},
      "required": ["color", "at"]}}}])");
  const Grammar g = tool_grammar(options);
  auto call = [](const std::string& params) { return "<tool_call>\n<function=draw>\n" + params + "</function>\n</tool_call>"; };
  EXPECT_TRUE(grammar_matches(g, call("<parameter=color>\nred\n</parameter>\n<parameter=at>\n{\"x\": 1, \"y\": 2.5}\n</parameter>\n")));
  EXPECT_TRUE(grammar_matches(g, call("<parameter=color>\nblue\n</parameter>\n<parameter=at>\n{\"x\": 1, \"y\": 2}\n</parameter>\n"
                                      "<parameter=label>\n\"origin\"\n</parameter>\n")));
  EXPECT_TRUE(grammar_matches(g, call("<parameter=color>\nblue\n</parameter>\n<parameter=at>\n{\"x\": 1, \"y\": 2}\n</parameter>\n"
                                      "<parameter=label>\nnull\n</parameter>\n")));
  EXPECT_FALSE(grammar_matches(g, call("<parameter=color>\ngreen\n</parameter>\n<parameter=at>\n{\"x\": 1, \"y\": 2}\n</parameter>\n")));
  EXPECT_FALSE(grammar_matches(g, call("<parameter=color>\nred\n</parameter>\n<parameter=at>\n{\"x\": 1}\n</parameter>\n")));
}

TEST(ToolCallGrammar, ReasoningPrefix) {
  const std::string thinking = "<think>\nThe user wants </thin weather; <think> nested, é, <</think\n</think>\n\n";
  for (ToolCallFormat format : kFormats) {
    SCOPED_TRACE(server::tool_call_format_name(format));
    ToolCallGrammarOptions options;
    options.format = format;
    options.tools = test_tools();
    const std::string gbnf = server::tool_call_gbnf(options);
    const Grammar g = parse_or_fail(server::with_reasoning_prefix(gbnf, false));
    const std::string text = render(format, {kWeather});
    EXPECT_TRUE(grammar_matches(g, thinking + text));
    EXPECT_TRUE(grammar_matches(g, text));  // the reasoning is optional
    EXPECT_TRUE(grammar_matches(g, "<think></think>" + text));
    EXPECT_TRUE(grammar_matches(g, "<think>x</think> \n \n" + text));
    EXPECT_FALSE(grammar_matches(g, "<think>x</think>\n\n\n\n\n" + text));  // at most 4 blanks
    EXPECT_FALSE(grammar_matches(g, "<think>a</think>b</think>" + text));   // the first </think> closes
    EXPECT_FALSE(grammar_matches(g, "<think>x</think>Sure! " + text));
    EXPECT_FALSE(grammar_matches(g, "<think>x" + text));                    // never closed
    EXPECT_FALSE(grammar_matches(g, thinking + render(format, {{"get_wether", kWeather.args}})));

    const Grammar started = parse_or_fail(server::with_reasoning_prefix(gbnf, true));
    EXPECT_TRUE(grammar_matches(started, "The user wants weather.\n</think>\n\n" + text));
    EXPECT_TRUE(grammar_matches(started, "</think>" + text));
    EXPECT_TRUE(grammar_matches(started, "<think>x</think>" + text));  // "<think>x" is reasoning text here
    EXPECT_FALSE(grammar_matches(started, text));                      // the reasoning must be closed first
    EXPECT_FALSE(grammar_matches(started, thinking + "</think>" + text));
  }
  // Any grammar with a root: its rule names do not clash with the prefix's.
  const Grammar g = parse_or_fail(server::with_reasoning_prefix("root ::= think-text | root-2\nthink-text ::= \"a\"\nroot-2 ::= \"b\"\n", false));
  EXPECT_TRUE(grammar_matches(g, "a"));
  EXPECT_TRUE(grammar_matches(g, "<think>a</think>\nb"));
  EXPECT_FALSE(grammar_matches(g, "<think>a</think>\nc"));
}

// ---- errors -----------------------------------------------------------------------------------

std::string error_of(const ToolCallGrammarOptions& options) {
  try {
    server::tool_call_gbnf(options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ToolCallGrammar, Errors) {
  auto with_tools = [](const std::string& tools_json, ToolCallFormat format = ToolCallFormat::hermes) {
    ToolCallGrammarOptions options;
    options.format = format;
    options.tools = ordered_json::parse(tools_json);
    return error_of(options);
  };
  auto contains = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  EXPECT_TRUE(contains(with_tools("{}"), "tools")) << with_tools("{}");
  EXPECT_TRUE(contains(with_tools("[]"), "non-empty"));
  EXPECT_TRUE(contains(with_tools("[5]"), "tools[0]"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "tool", "function": {"name": "f"}}])"), "tools[0].type"));
  EXPECT_TRUE(contains(with_tools(R"([{"function": {"name": "f"}}])"), "tools[0].type"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function"}])"), "tools[0].function"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function", "function": {"name": ""}}])"), "tools[0].function.name"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function", "function": {"name": 5}}])"), "tools[0].function.name"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}])"),
                       "two tools are named 'f'"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function", "function": {"name": "f", "parameters": "x"}}])"), "tool 'f'"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}])"),
                       "tool 'f'"));

  // A schema keyword json_schema_to_gbnf refuses: the message names the tool and the keyword.
  const std::string refused = with_tools(
      R"([{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"not": {"type": "string"}}}}}}])");
  EXPECT_TRUE(contains(refused, "tool 'lookup'")) << refused;
  EXPECT_TRUE(contains(refused, "'not'")) << refused;
  const std::string refused_xml = with_tools(
      R"([{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"n": {"type": "integer", "not": {"const": 3}}}}}}])",
      ToolCallFormat::qwen3_xml);
  EXPECT_TRUE(contains(refused_xml, "lookup") && contains(refused_xml, "'n'") && contains(refused_xml, "not")) << refused_xml;

  // Unknown named function.
  ToolCallGrammarOptions options;
  options.tools = test_tools();
  options.function = "get_time";
  const std::string unknown = error_of(options);
  EXPECT_TRUE(contains(unknown, "'get_time'") && contains(unknown, "get_weather")) << unknown;

  // qwen3-xml needs an object with properties, and string values it can hold to their schema.
  const std::string any_of = with_tools(
      R"([{"type": "function", "function": {"name": "pick", "parameters": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}])",
      ToolCallFormat::qwen3_xml);
  EXPECT_TRUE(contains(any_of, "tool 'pick'") && contains(any_of, "anyOf")) << any_of;
  const std::string pattern = with_tools(
      R"([{"type": "function", "function": {"name": "pick", "parameters": {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}}}])",
      ToolCallFormat::qwen3_xml);
  EXPECT_TRUE(contains(pattern, "tool 'pick'") && contains(pattern, "'id'") && contains(pattern, "'pattern'")) << pattern;
  const std::string missing = with_tools(
      R"([{"type": "function", "function": {"name": "pick", "parameters": {"type": "object", "properties": {}, "required": ["id"]}}}])",
      ToolCallFormat::qwen3_xml);
  EXPECT_TRUE(contains(missing, "'id'")) << missing;
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function", "function": {"name": "a>b"}}])", ToolCallFormat::qwen3_xml), "'>'"));
  EXPECT_TRUE(contains(with_tools(R"([{"type": "function", "function": {"name": "a[b"}}])", ToolCallFormat::mistral_args), "'['"));
  // The same string constraint is fine where values are JSON.
  EXPECT_EQ(with_tools(
                R"([{"type": "function", "function": {"name": "pick", "parameters": {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}}}])"),
            "(no error)");
}

// Tool names needing JSON escapes are written escaped in JSON formats.
TEST(ToolCallGrammar, NamesAreJsonEncodedInJsonFormats) {
  ToolCallGrammarOptions options;
  options.format = ToolCallFormat::generic;
  options.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "say \"hi\" é"}}])");
  const Grammar g = tool_grammar(options);
  EXPECT_TRUE(grammar_matches(g, "{\"tool_calls\": [{\"name\": \"say \\\"hi\\\" é\", \"arguments\": {}}]}"));
  EXPECT_FALSE(grammar_matches(g, "{\"tool_calls\": [{\"name\": \"say \"hi\" é\", \"arguments\": {}}]}"));
}

}  // namespace
}  // namespace nucleus
