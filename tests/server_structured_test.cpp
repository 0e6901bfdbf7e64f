// Structured output over HTTP: OpenAI's response_format (json_object, json_schema; streamed and
// not, n > 1), vLLM's structured_outputs and guided_* fields, llama.cpp's grammar and json_schema;
// logprobs of the masked distribution; every unsupported or malformed constraint is a 400 that
// names it (never unconstrained output); compile and mask times in /metrics.
#include <gtest/gtest.h>

#include <cmath>

#include "server_test_harness.h"
#include "structured/constraint.h"
#include "structured/grammar_matcher.h"

namespace nucleus {
namespace {

using nlohmann::json;
using test::post_json;

// Properties deliberately not in alphabetical order: outputs must follow the schema's order.
constexpr const char* kSchemaText = R"({
  "type": "object",
  "properties": {
    "sunny": {"type": "boolean"},
    "city": {"type": "string", "maxLength": 10},
    "rank": {"type": "integer", "minimum": 1, "maximum": 9}
  },
  "required": ["sunny", "city", "rank"],
  "additionalProperties": false
})";

void expect_valid(const std::string& text, const std::string& finish_reason) {
  if (finish_reason != "stop") return;  // cut by max_tokens: checked as a prefix elsewhere
  nlohmann::ordered_json v;
  ASSERT_NO_THROW(v = nlohmann::ordered_json::parse(text)) << text;
  ASSERT_TRUE(v.is_object()) << text;
  ASSERT_EQ(v.size(), 3u) << text;
  EXPECT_EQ(v.begin().key(), "sunny") << "properties in the schema's order: " << text;
  EXPECT_TRUE(v["city"].is_string()) << text;
  ASSERT_TRUE(v["rank"].is_number_integer()) << text;
  EXPECT_GE(v["rank"].get<int>(), 1);
  EXPECT_LE(v["rank"].get<int>(), 9);
  EXPECT_TRUE(v["sunny"].is_boolean()) << text;
}

class ServerStructured : public test::TwoServersTest<ServerStructured> {};

TEST_F(ServerStructured, ChatResponseFormatJsonSchemaStreamedAndNot) {
  // Sent as text: nlohmann::json would sort the schema's keys.
  const std::string body_text = std::string(R"({"messages": [{"role": "user", "content": "Weather?"}], "max_tokens": 200, "n": 2,
      "seed": 5, "response_format": {"type": "json_schema", "json_schema": {"name": "weather", "strict": true, "schema": )") +
                                kSchemaText + "}}}";
  const json body = json::parse(body_text);
  const auto r = test::post_raw(qwen_->port(), "/v1/chat/completions", body_text);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["choices"].size(), 2u);
  int stopped = 0;
  for (const json& choice : r.json["choices"]) {
    expect_valid(choice["message"]["content"].get<std::string>(), choice["finish_reason"].get<std::string>());
    stopped += choice["finish_reason"] == "stop";
  }
  EXPECT_GE(stopped, 1) << r.body;

  std::string one_text = body_text;
  one_text.replace(one_text.find("\"n\": 2"), 6, "\"n\": 1");
  const json one = json::parse(one_text);
  std::string stream_text = one_text;
  stream_text.insert(1, "\"stream\": true, ");
  const auto stream = test::post_stream_raw(qwen_->port(), "/v1/chat/completions", stream_text);
  ASSERT_EQ(stream.status, 200);
  ASSERT_TRUE(stream.done);
  std::string finish;
  for (const json& chunk : stream.chunks)
    for (const json& c : chunk["choices"])
      if (c.contains("finish_reason") && c["finish_reason"].is_string()) finish = c["finish_reason"];
  expect_valid(test::stream_text(stream), finish);
  // The same request unstreamed gives the same text (seeded).
  const auto same = test::post_raw(qwen_->port(), "/v1/chat/completions", one_text);
  ASSERT_EQ(same.status, 200);
  EXPECT_EQ(same.json["choices"][0]["message"]["content"], test::stream_text(stream));
}

TEST_F(ServerStructured, EveryDialectConstrainsCompletions) {
  struct Case {
    const char* name;
    json field;
    std::function<bool(const std::string&)> check;
  };
  const std::vector<std::string> colors = {"red", "green", "blue"};
  auto is_color = [&](const std::string& s) { return std::find(colors.begin(), colors.end(), s) != colors.end(); };
  auto is_code = [](const std::string& s) {
    return grammar_matches(parse_gbnf("root ::= [a-c]{2} \"-\" [0-9]{2}\n"), s);
  };
  auto is_object = [](const std::string& s) {
    const json v = json::parse(s, nullptr, false);
    return !v.is_discarded() && v.is_object();
  };
  const std::vector<Case> cases = {
      {"structured_outputs.choice", {{"structured_outputs", {{"choice", colors}}}}, is_color},
      {"guided_choice", {{"guided_choice", colors}}, is_color},
      {"structured_outputs.regex", {{"structured_outputs", {{"regex", "[a-c]{2}-[0-9]{2}"}}}}, is_code},
      {"guided_regex", {{"guided_regex", "[a-c]{2}-[0-9]{2}"}}, is_code},
      {"grammar", {{"grammar", "root ::= [a-c]{2} \"-\" [0-9]{2}\n"}}, is_code},
      {"guided_grammar", {{"guided_grammar", "root ::= [a-c]{2} \"-\" [0-9]{2}\n"}}, is_code},
      {"json_schema (llama.cpp)", {{"json_schema", {{"enum", colors}}}}, [&](const std::string& s) {
         return s.size() > 2 && s.front() == '"' && is_color(s.substr(1, s.size() - 2));
       }},
      {"guided_json", {{"guided_json", {{"type", "object"}}}}, is_object},
      {"response_format json_object", {{"response_format", {{"type", "json_object"}}}}, is_object},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (int seed = 0; seed < 3; ++seed) {
      json body = {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"seed", seed}, {"temperature", 1.0}};
      body.update(c.field);
      const auto r = post_json(stories_->port(), "/v1/completions", body);
      ASSERT_EQ(r.status, 200) << r.body;
      const std::string text = r.json["choices"][0]["text"];
      const std::string finish = r.json["choices"][0]["finish_reason"];
      if (finish == "stop") {
        EXPECT_TRUE(c.check(text)) << text;
      } else {
        EXPECT_EQ(finish, "length");
        EXPECT_NE(std::string(c.name).find("json"), std::string::npos) << "only the unbounded JSON cases may run out: " << text;
      }
    }
  }
}

TEST_F(ServerStructured, LogprobsAreOfTheMaskedDistribution) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Pick"}}}},
                     {"max_tokens", 8},
                     {"logprobs", true},
                     {"top_logprobs", 5},
                     {"structured_outputs", {{"choice", {"yes", "no"}}}}};
  const auto r = post_json(qwen_->port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.json["choices"][0]["message"]["content"];
  EXPECT_TRUE(text == "yes" || text == "no") << text;
  const json& first = r.json["choices"][0]["logprobs"]["content"][0];
  // At the first step only tokens starting "yes" or "no" (and their prefixes) have mass.
  double mass = 0;
  for (const json& alt : first["top_logprobs"]) {
    if (alt["logprob"].is_null()) continue;  // −inf
    const std::string t = alt["token"];
    EXPECT_TRUE(std::string("yes").rfind(t, 0) == 0 || std::string("no").rfind(t, 0) == 0) << t;
    mass += std::exp(alt["logprob"].get<double>());
  }
  EXPECT_NEAR(mass, 1.0, 1e-3);  // renormalized over the allowed tokens
}

TEST_F(ServerStructured, UnsupportedOrMalformedConstraintsAre400sNamingThem) {
  struct Case {
    json field;
    const char* param;
    const char* mentions;
  };
  const std::vector<Case> cases = {
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"not", {{"type", "string"}}}}}}}}}},
       "response_format", "'not'"},
      {{{"guided_json", {{"type", "array"}, {"uniqueItems", true}}}}, "guided_json", "uniqueItems"},
      {{{"grammar", "root ::= \"a\" | undefined-rule\n"}}, "grammar", "undefined-rule"},
      {{{"grammar", "root ::= [a-\n"}}, "grammar", "line"},
      {{{"guided_regex", "(a)\\1"}}, "guided_regex", "backreference"},
      {{{"response_format", {{"type", "yaml"}}}}, "response_format", "yaml"},
      {{{"structured_outputs", {{"choice", json::array()}}}}, "structured_outputs.choice", "non-empty"},
      {{{"structured_outputs", {{"json", {{"type", "object"}}}, {"regex", "a"}}}}, "structured_outputs", "exactly one"},
      {{{"structured_outputs", {{"xml", "<a/>"}}}}, "structured_outputs.xml", "not a structured_outputs field"},
      {{{"guided_choice", {"a"}}, {"grammar", "root ::= \"a\"\n"}}, "grammar", "give only one"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field.dump());
    json body = {{"prompt", "x"}, {"max_tokens", 4}};
    body.update(c.field);
    const auto r = post_json(stories_->port(), "/v1/completions", body);
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json["error"]["param"], c.param) << r.body;
    EXPECT_NE(r.json["error"]["message"].get<std::string>().find(c.mentions), std::string::npos) << r.body;
  }
}

TEST_F(ServerStructured, CompileAndMaskTimesAreInTheMetrics) {
  const json body = {{"prompt", "x"}, {"max_tokens", 6}, {"guided_regex", "[0-9]{1,4}z{1,3}q"}};
  ASSERT_EQ(post_json(stories_->port(), "/v1/completions", body).status, 200);
  const std::string metrics = test::get(stories_->port(), "/metrics").body;
  EXPECT_GE(test::metric_value(metrics, "nucleus_structured_compile_seconds_count"), 1.0) << metrics;
  EXPECT_GE(test::metric_value(metrics, "nucleus_structured_mask_seconds_count"), 1.0);
  EXPECT_NE(metrics.find("nucleus_structured_mask_seconds_bucket{le=\"1e-05\"}"), std::string::npos);
  // The same constraint again comes from the cache: no second compile.
  const double compiles = test::metric_value(metrics, "nucleus_structured_compile_seconds_count");
  ASSERT_EQ(post_json(stories_->port(), "/v1/completions", body).status, 200);
  EXPECT_EQ(test::metric_value(test::get(stories_->port(), "/metrics").body, "nucleus_structured_compile_seconds_count"), compiles);
}

}  // namespace
}  // namespace nucleus
