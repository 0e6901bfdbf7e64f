// Bugs the fuzz targets (fuzz/, docs/RELIABILITY.md) found, one test each, with the input that found
// it; the same inputs stay in fuzz/corpus/<target>/regression-* so every fuzz run replays them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "core/error.h"
#include "server/api_error.h"
#include "server/chat_tools.h"
#include "structured/grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/json_schema_to_gbnf.h"
#include "tokenizer/chat_template.h"

namespace nucleus {
namespace {

// Expects `f` to throw an Error whose message contains `part`.
template <typename F>
void expect_error_containing(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown; expected one mentioning '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// json_schema fuzz target: an array with minItems > maxItems was compiled to the repetition
// `{4,3}`, which parse_gbnf then refused with "repetition {m,n} with n < m at line 63" — an error
// about a grammar the user never wrote. It is now refused where it is found, naming the keywords and
// the schema's path (fuzz/corpus/json_schema/regression-min-items-above-max-items).
TEST(FuzzRegressions, JsonSchemaMinItemsAboveMaxItemsIsNamed) {
  const std::string schema =
      R"({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
          "minItems": 5, "maxItems": 4}}})";
  expect_error_containing([&] { json_schema_text_to_gbnf(schema); }, "minItems > maxItems");
  expect_error_containing([&] { json_schema_text_to_gbnf(schema); }, "#/properties/tags");
  // Also with a tuple in front and without further items.
  expect_error_containing(
      [] { json_schema_text_to_gbnf(R"({"prefixItems": [{"type": "integer"}], "minItems": 3, "maxItems": 2})"); },
      "minItems > maxItems");
  expect_error_containing(
      [] { json_schema_text_to_gbnf(R"({"type": "array", "items": false, "minItems": 1, "maxItems": 0})"); },
      "minItems > maxItems");
  // Equal bounds still compile, and the grammar parses.
  EXPECT_NO_THROW(parse_gbnf(json_schema_text_to_gbnf(R"({"type": "array", "minItems": 2, "maxItems": 2})")));
}

// jinja_template fuzz target: a string literal whose source ends right after a backslash
// (`{{ '\`) made the lexer loop forever — the escape branch `continue`d without moving past the
// backslash. A model file's chat template is outside input, so loading such a model hung. Now it is
// the "unterminated string literal" Error (fuzz/corpus/jinja_template/regression-string-ending-in-backslash).
TEST(FuzzRegressions, JinjaStringEndingInBackslashIsUnterminated) {
  expect_error_containing([] { chat_template_from_jinja("{{ 'abc\\"); }, "unterminated string literal");
  expect_error_containing([] { chat_template_from_jinja("{% set x = \"\\"); }, "unterminated string literal");
  EXPECT_NO_THROW(chat_template_from_jinja("{{ 'a\\\\' }}"));  // an escaped backslash still closes normally
}

// json_schema fuzz target: a schema text holding a number beyond double's range ("1e309") made the
// JSON parser throw out_of_range, not the parse_error the compiler caught, so the exception left
// json_schema_text_to_gbnf as something other than an Error (`nucleus generate --json-schema` would
// terminate). It is now the "not valid JSON" Error (fuzz/corpus/json_schema/regression-number-overflow).
TEST(FuzzRegressions, JsonSchemaNumberOverflowIsAnError) {
  expect_error_containing([] { json_schema_text_to_gbnf("1e309"); }, "not valid JSON");
  expect_error_containing([] { json_schema_text_to_gbnf(R"({"type": "number", "maximum": -1e400})"); }, "not valid JSON");
}

// json_schema fuzz target: parse_gbnf named the rules it makes for groups and repetitions
// `<rule>-opt-N`, `<rule>-star-N`, ... in the same namespace as the grammar's own rules, so a valid
// grammar that defines a rule of such a name after using a repetition failed with "rule 'ws-opt-5'
// is defined twice". The schema compiler writes rule names from property names and patterns, so a
// patternProperties key containing "ws-opt-5" hit it. Helper rules now have no name to look up
// (fuzz/corpus/json_schema/regression-rule-named-like-a-helper).
TEST(FuzzRegressions, GbnfRuleNamedLikeAHelperRule) {
  std::string gbnf = "root ::= [a-z]{0,2} (\"x\" | \"y\")* z\nz ::= \"!\"\n";
  for (const char* kind : {"opt", "star", "group", "char"})
    for (int i = 1; i <= 8; ++i) gbnf += std::string("root-") + kind + "-" + std::to_string(i) + " ::= \"q\"\n";
  Grammar grammar;
  ASSERT_NO_THROW(grammar = parse_gbnf(gbnf));
  EXPECT_TRUE(grammar_matches(grammar, "abxy!"));
  EXPECT_FALSE(grammar_matches(grammar, "q"));
  const std::string schema =
      R"({"type": "object", "patternProperties": {"##ws-opt-5##": {"type": "integer"}}, "additionalProperties": false})";
  EXPECT_NO_THROW(parse_gbnf(json_schema_text_to_gbnf(schema)));
  // A rule the grammar uses but never defines is still reported.
  expect_error_containing([] { parse_gbnf("root ::= \"a\"* root-star-1"); }, "root-star-1");
}

// jinja_template fuzz target: `'' * 4 ** 30` (an empty string repeated 2^60 times) passed the size
// check (it guards against large results, and this one is empty) and then looped 2^60 times. An
// empty sequence repeated is now empty at once (fuzz/corpus/jinja_template/regression-empty-string-repeated).
TEST(FuzzRegressions, AGrammarTooAmbiguousIsAnErrorNotAnExponentialState) {
  // regression-ambiguous-grammar-stacks: every byte can close or open a nested `line`, so the
  // parses alive at once grew without bound (a 40-byte text took seconds); past
  // kMaxLiveStacks the matcher says so instead.
  GrammarMatcher matcher(std::make_shared<GrammarAutomaton>(
      std::make_shared<const Grammar>(parse_gbnf("root ::= line{2,4}\nline ::= [^\n] root*\n"))));
  const std::string text(200, 'x');
  size_t taken = 0;
  try {
    for (; taken < text.size(); ++taken) ASSERT_TRUE(matcher.accept(text.substr(taken, 1)));
    FAIL() << "200 bytes taken without an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too ambiguous"), std::string::npos) << e.what();
  }
  EXPECT_GT(taken, 5u);  // the first bytes are fine
  EXPECT_LE(matcher.state().size(), GrammarAutomaton::kMaxLiveStacks);
  // An ordinary grammar over the same text is untouched.
  EXPECT_TRUE(grammar_matches(parse_gbnf("root ::= [x]*"), text));
}

TEST(FuzzRegressions, JinjaEmptySequenceRepeatedManyTimes) {
  const ChatTemplate t =
      chat_template_from_jinja("{{ '' * 4 ** 30 }}{{ ([] * 4 ** 30) | length }}{{ (nothing ~ nothing) * 99999999999 }}x");
  EXPECT_EQ(render_chat_json(t, nlohmann::ordered_json::array(), false), "0x");
  // A non-empty sequence is still held to the size limit.
  const ChatTemplate big = chat_template_from_jinja("{{ 'ab' * 4 ** 30 }}");
  expect_error_containing([&] { render_chat_json(big, nlohmann::ordered_json::array(), false); }, "too large");
}

// jinja_template fuzz target: `join` filters chained on a string (each one puts its separator
// between every character) multiply its length at each step: five joins with a 32-byte separator
// ask for ~270 MB (the fuzzer's input timed out building them). Every string a template builds is
// now held to 16 MiB, checked as it grows (fuzz/corpus/jinja_template/regression-nested-joins).
TEST(FuzzRegressions, JinjaNestedJoinsAreHeldToTheStringSizeLimit) {
  const std::string sep = "'" + std::string(32, '-') + "'";
  std::string expr = "'abcdefgh'";
  for (int i = 0; i < 5; ++i) expr += " | join(" + sep + ")";
  const ChatTemplate filters = chat_template_from_jinja("{{ " + expr + " }}");
  expect_error_containing([&] { render_chat_json(filters, nlohmann::ordered_json::array(), false); }, "too large");
  // The str.join method, and output that grows past the limit one statement at a time.
  const ChatTemplate method = chat_template_from_jinja("{% set s = 'x' * 9000000 %}{{ '-'.join([s, s]) }}");
  expect_error_containing([&] { render_chat_json(method, nlohmann::ordered_json::array(), false); }, "too large");
  const ChatTemplate output = chat_template_from_jinja("{% set s = 'x' * 9000000 %}{% for i in range(2) %}{{ s }}{% endfor %}");
  expect_error_containing([&] { render_chat_json(output, nlohmann::ordered_json::array(), false); }, "too large");
  // Iterating a string of a few MB: each string past 1 MiB is refused before one Value per
  // character is made (the fuzzer's timeout-8a5518c2: 28 s under ASan building them for chained
  // joins; fuzz/corpus/jinja_template/regression-join-iterates-megabytes). join itself now walks
  // a string in place, so it is held only by the output limit.
  const ChatTemplate iterated = chat_template_from_jinja("{% set s = 'x' * 2000000 %}{{ s | list | length }}");
  expect_error_containing([&] { render_chat_json(iterated, nlohmann::ordered_json::array(), false); }, "too large to iterate");
  EXPECT_EQ(render_chat_json(chat_template_from_jinja("{% set s = 'x' * 1000000 %}{{ s | list | length }}"),
                             nlohmann::ordered_json::array(), false),
            "1000000");
  EXPECT_EQ(render_chat_json(chat_template_from_jinja("{% set s = 'x' * 2000000 %}{{ s | join('-') | length }}"),
                             nlohmann::ordered_json::array(), false),
            "3999999");
  // join on a string walks its characters in place (UTF-8 aware), without a Value per character:
  // chained joins on strings just under 1 MiB spent 25 s under ASan building them
  // (fuzz/corpus/jinja_template/regression-chained-joins-of-strings).
  EXPECT_EQ(render_chat_json(chat_template_from_jinja("{{ 'a\u00e9\u20ac' | join('-') }}|{{ 'xy' | join }}"),
                             nlohmann::ordered_json::array(), false),
            "a-\u00e9-\u20ac|xy");
  // Four joins (~8 MB) are still fine.
  std::string four = "'abcdefgh'";
  for (int i = 0; i < 4; ++i) four += " | join(" + sep + ")";
  EXPECT_EQ(render_chat_json(chat_template_from_jinja("{{ (" + four + ") | length }}"), nlohmann::ordered_json::array(), false),
            "8301448");
}

// openai_request fuzz target: a chat message's content part or a tool whose "type" was not a string
// ({"type": {"url": "x"}}) made json's value("type", "") throw a type_error, which the server turns
// into a 500 instead of the 400 naming the field. Now both are the 400
// (fuzz/corpus/openai_request/regression-content-part-type-not-a-string).
TEST(FuzzRegressions, NonStringTypeFieldsAreBadRequests) {
  using nlohmann::ordered_json;
  auto expect_400 = [](auto&& f, const std::string& param) {
    try {
      f();
      ADD_FAILURE() << "no ApiError for " << param;
    } catch (const server::ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.param, param) << e.what();
    }
  };
  const auto messages = ordered_json::parse(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": {"url": "x"}}]}]})");
  expect_400([&] { server::parse_chat_messages(messages); }, "messages[0].content");
  const auto tools = ordered_json::parse(R"({"tools": [{"type": ["function"], "function": {"name": "f"}}]})");
  expect_400([&] { server::parse_tool_request(tools); }, "tools[0].type");
}

}  // namespace
}  // namespace nucleus
