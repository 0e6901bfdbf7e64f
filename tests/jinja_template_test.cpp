// The Jinja interpreter (tokenizer/jinja_*.h) against Python's jinja2 as transformers runs chat
// templates: every real template in ../shared/templates, plus Phi-4's and Phi-4-mini's, rendered for a
// set of conversations (system/user, multi-turn, tools, tool calls with object and string arguments,
// tool results, reasoning_content, thinking on/off through chat_template_kwargs, with and without a
// generation prompt) must give jinja2's bytes, or fail where jinja2 fails. All reference renderings come
// from one python3 process (tests/tools/render_chat_reference.py). Then the interpreter's features one
// by one, with expected strings taken from jinja2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_helpers.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja_interpreter.h"

namespace nucleus {
namespace {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

// The day both renderers' strftime_now formats.
std::tm fixed_day() {
  std::tm day{};
  day.tm_year = 2024 - 1900;
  day.tm_mon = 6;  // July
  day.tm_mday = 26;
  day.tm_wday = 5;  // a Friday
  day.tm_yday = 207;
  return day;
}

// Two functions with JSON-Schema parameters, as the OpenAI API sends them.
constexpr const char* kTools = R"json([
  {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "The city's name, e.g. \"Paris\""},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
      "days": {"type": "integer", "description": "Days to forecast", "default": 1}},
      "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "description": "Get the local time in a time zone",
    "parameters": {"type": "object", "properties": {
      "timezone": {"type": "string", "description": "IANA zone such as Asia/Tokyo"},
      "format": {"type": ["string", "null"], "description": "strftime format"}},
      "required": ["timezone"]}}}
])json";

// The conversations; "tools": true stands for kTools. Tool call ids are 9 alphanumerics, as Mistral's
// templates demand.
constexpr const char* kConversations = R"json([
 {"name": "system+user", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello there"}]},
 {"name": "user only", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "user", "content": "Hello there"}]},
 {"name": "multi-turn", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello there"},
               {"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": "  What is 2+2?\n"}]},
 {"name": "user+assistant, no generation prompt", "add_generation_prompt": false, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": "Hi! How can I help?"}]},
 {"name": "tools", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": true,
  "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Weather in Paris?"}]},
 {"name": "tool call (object arguments) and result", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": true,
  "messages": [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "Ab3dE6gH9", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
               {"role": "tool", "tool_call_id": "Ab3dE6gH9", "name": "get_weather", "content": "{\"temperature\": 21}"}]},
 {"name": "tool call (string arguments), answer", "add_generation_prompt": false, "bos_token": "<s>", "eos_token": "</s>", "tools": true,
  "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "Ab3dE6gH9", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
               {"role": "tool", "tool_call_id": "Ab3dE6gH9", "name": "get_weather", "content": "21 degrees"},
               {"role": "assistant", "content": "It is 21 °C in Paris."}]},
 {"name": "parallel tool calls, content null", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": true,
  "messages": [{"role": "user", "content": "Weather in Paris and the time in 東京?"},
               {"role": "assistant", "content": null, "tool_calls": [
                 {"id": "Ab3dE6gH9", "type": "function", "function": {"name": "get_weather",
                   "arguments": {"city": "Paris", "days": 3, "details": {"wind": true, "hourly": [1, 2.5]}}}},
                 {"id": "Zy8xW7vU6", "type": "function", "function": {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}}]},
               {"role": "tool", "tool_call_id": "Ab3dE6gH9", "name": "get_weather", "content": "sunny"},
               {"role": "tool", "tool_call_id": "Zy8xW7vU6", "name": "get_time", "content": "09:00"}]},
 {"name": "reasoning_content", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "user", "content": "Hello there"},
               {"role": "assistant", "content": "Hello!", "reasoning_content": "The user greets me."},
               {"role": "user", "content": "What is 2+2?"}]},
 {"name": "reasoning_content, last turn", "add_generation_prompt": false, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "user", "content": "Hello there"},
               {"role": "assistant", "content": "Hello!", "reasoning_content": "The user greets me."}]},
 {"name": "think in content", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "user", "content": "Hello there"},
               {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHello!"},
               {"role": "user", "content": "Hello there"}]},
 {"name": "enable_thinking true", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "kwargs": {"enable_thinking": true},
  "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello there"}]},
 {"name": "enable_thinking false", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "kwargs": {"enable_thinking": false},
  "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello there"}]},
 {"name": "multi-turn, enable_thinking false", "add_generation_prompt": true, "bos_token": "", "eos_token": "<|im_end|>",
  "kwargs": {"enable_thinking": false},
  "messages": [{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": "Hi! How can I help?"},
               {"role": "user", "content": "What is 2+2?"}]},
 {"name": "tools, enable_thinking false, no bos", "add_generation_prompt": true, "bos_token": "", "eos_token": "<|endoftext|>",
  "tools": true, "kwargs": {"enable_thinking": false},
  "messages": [{"role": "user", "content": "Weather in Paris?"}]},
 {"name": "system after the first message", "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "messages": [{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": "Hi! How can I help?"},
               {"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}]},
 {"name": "system message carrying tools (Phi-4-mini)", "add_generation_prompt": false, "bos_token": "<s>", "eos_token": "<|endoftext|>",
  "messages": [{"role": "system", "content": "You are terse.", "tools": "[{\"name\": \"get_weather\", \"parameters\": {\"city\": {\"type\": \"str\"}}}]"},
               {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "Sunny."}]}
])json";

// microsoft/phi-4's and microsoft/Phi-4-mini-instruct's chat_template (tokenizer_config.json): no
// family renderer reproduces them.
constexpr const char* kPhi4 =
    R"jinja({% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') %}{{'<|im_start|>user<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'assistant') %}{{'<|im_start|>assistant<|im_sep|>' + message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %})jinja";
constexpr const char* kPhi4Mini =
    R"jinja({% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %})jinja";

ordered_json conversations() {
  ordered_json all = ordered_json::parse(kConversations);
  const ordered_json tools = ordered_json::parse(kTools);
  for (ordered_json& c : all)
    if (c.contains("tools")) c["tools"] = tools;
  return all;
}

struct NamedTemplate {
  std::string name;
  std::string source;
};

std::vector<NamedTemplate> templates_to_check() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(test::shared_path("templates")))
    if (entry.path().extension() == ".jinja") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<NamedTemplate> out;
  for (const fs::path& path : paths) out.push_back({path.filename().string(), test::read_file(path.string())});
  out.push_back({"microsoft/phi-4 (inline)", kPhi4});
  out.push_back({"microsoft/Phi-4-mini-instruct (inline)", kPhi4Mini});
  return out;
}

// jinja2's renderings: one list per template of {"text"} or {"error"} per conversation.
ordered_json reference_renderings(const std::vector<NamedTemplate>& templates, const ordered_json& cases) {
  ordered_json request = {{"date", "2024-07-26"}, {"cases", cases}, {"templates", ordered_json::array()}};
  for (const NamedTemplate& t : templates) request["templates"].push_back({{"source", t.source}});
  const std::string request_path = testing::TempDir() + "/nucleus-jinja-reference.json";
  std::ofstream(request_path) << request.dump();
  // Debian's python3 with Debian's python3-jinja2 (scripts/install-deps.sh installs it).
  const test::CommandResult run = test::run_shell("/usr/bin/python3 " + std::string(NUCLEUS_SOURCE_DIR) +
                                                  "/tests/tools/render_chat_reference.py " + request_path);
  std::remove(request_path.c_str());
  if (run.exit_code != 0) throw std::runtime_error("the jinja2 reference renderer failed (is python3-jinja2 installed?)");
  return ordered_json::parse(run.out);
}

TEST(JinjaTemplates, EverySharedTemplateRendersLikeJinja2) {
  NUCLEUS_REQUIRE_SHARED();
  const std::vector<NamedTemplate> templates = templates_to_check();
  ASSERT_GE(templates.size(), 66u);  // the 64 shared templates and the two inline ones
  const ordered_json cases = conversations();
  const ordered_json expected = reference_renderings(templates, cases);
  ASSERT_EQ(expected.size(), templates.size());
  int identical = 0, both_raise = 0;
  for (size_t t = 0; t < templates.size(); ++t) {
    std::string parse_error;
    ChatTemplate chat_template;
    try {
      chat_template = chat_template_from_jinja(templates[t].source);
    } catch (const Error& e) {
      parse_error = e.what();
    }
    chat_template.now = fixed_day();
    for (size_t c = 0; c < cases.size(); ++c) {
      const ordered_json& conversation = cases[c];
      SCOPED_TRACE(templates[t].name + ", conversation '" + conversation["name"].get<std::string>() + "'");
      const ordered_json& reference = expected[t][c];
      std::string rendered, error = parse_error;
      if (error.empty()) {
        chat_template.bos_token = conversation["bos_token"].get<std::string>();
        chat_template.eos_token = conversation["eos_token"].get<std::string>();
        try {
          rendered = render_chat_json(chat_template, conversation["messages"], conversation["add_generation_prompt"].get<bool>(),
                                      conversation.value("kwargs", ordered_json::object()),
                                      conversation.value("tools", ordered_json()));
        } catch (const Error& e) {
          error = e.what();
        }
      }
      if (reference.contains("error")) {
        EXPECT_FALSE(error.empty()) << "jinja2 raises (" << reference["error"].get<std::string>() << ") but nucleus rendered\n"
                                    << rendered;
        both_raise += !error.empty();
      } else {
        EXPECT_TRUE(error.empty()) << "nucleus raised: " << error;
        EXPECT_EQ(rendered, reference["text"].get<std::string>());
        identical += error.empty() && rendered == reference["text"].get<std::string>();
      }
    }
  }
  std::printf("[ jinja2   ] %zu templates x %zu conversations: %d identical, %d raise in both\n", templates.size(),
              cases.size(), identical, both_raise);
  // Most renderings succeed: a template that raises everywhere would leave the comparison empty.
  EXPECT_GE(identical, static_cast<int>(templates.size() * cases.size() * 3 / 4));
}

// ---- The interpreter's features, one by one (expected strings rendered by jinja2) ----

std::string render(const std::string& source, const std::string& variables_json = "{}") {
  const ordered_json variables = ordered_json::parse(variables_json);
  jinja::Dict dict;
  for (auto it = variables.begin(); it != variables.end(); ++it)
    dict.set(jinja::Value::from_string(it.key()), jinja::value_from_json(it.value()));
  jinja::RenderOptions options;
  options.now = fixed_day();
  return jinja::JinjaTemplate(source).render(dict, options);
}

std::string error_of(const std::string& source, const std::string& variables_json = "{}") {
  try {
    render(source, variables_json);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JinjaInterpreter, WhitespaceControl) {
  // trim_blocks drops the newline after a tag, lstrip_blocks the indentation before one, '-' all
  // whitespace on its side, '+' turns lstrip off; the source's one trailing newline is dropped.
  EXPECT_EQ(render("{% if true %}\n    yes\n{% endif %}\n  {%- if true -%}  [x]  {%- endif %}\n{# c #}\nend\n"), "    yes\n[x]end");
  EXPECT_EQ(render("a  {{- ' b ' -}}  c\n  {% if x %}{{ x }}{% endif %}|{%+ if x %}{{ x }}{% endif %}", R"({"x": 1})"),
            "a b c\n1|1");
}

TEST(JinjaInterpreter, LoopVariables) {
  EXPECT_EQ(render("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem | default('-') }}"
                   "{{ loop.nextitem | default('-') }};{% endfor %}"),
            "1032TrueFalse3-b;2121FalseFalse3ac;3210FalseTrue3b-;");
  EXPECT_EQ(render("{% for k, v in d.items() if v is not none %}{{ k }}={{ v }}{% if not loop.last %},{% endif %}"
                   "{% else %}empty{% endfor %}|{% for x in [] %}x{% else %}none{% endfor %}",
                   R"({"d": {"b": 1, "a": null, "c": "z"}})"),
            "b=1,c=z|none");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x is odd %}{% continue %}{% endif %}{% if x > 6 %}{% break %}{% endif %}"
                   "{{ x }}{% endfor %}"),
            "0246");
}

TEST(JinjaInterpreter, NamespaceOutlivesTheLoopButSetDoesNot) {
  EXPECT_EQ(render("{% set ns = namespace(count=0, last=none) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}"
                   "{% set ns.last = m %}{% set local = 1 %}{% endfor %}{{ ns.count }} {{ ns.last }} {{ local is defined }}",
                   R"({"messages": ["x", "y"]})"),
            "2 y False");
}

TEST(JinjaInterpreter, MacrosBlockSetAndFilterBlocks) {
  EXPECT_EQ(render("{% macro greet(name, punctuation='!', upper=false) %}{{ (name | upper if upper else name) ~ punctuation }}"
                   "{% endmacro %}{{ greet('ann') }} {{ greet('bob', upper=true) }} {{ greet('cy', '?') }}"),
            "ann! BOB! cy?");
  EXPECT_EQ(render("{% set text %}{{ 1 + 2 }} items{% endset %}[{{ text }}] {% filter upper %}shout {{ text }}{% endfilter %}"),
            "[3 items] SHOUT 3 ITEMS");
}

TEST(JinjaInterpreter, Slicing) {
  EXPECT_EQ(render("{{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[-2:] }} {{ [0, 1, 2, 3, 4, 5][::2] }} "
                   "{{ [0, 1, 2, 3, 4, 5][4:1:-1] }} {{ 'h\xC3\xA9llo'[1] }}"),
            "bcd fedcba ef [0, 2, 4] [4, 3, 2] \xC3\xA9");
}

TEST(JinjaInterpreter, TojsonIsPythonsJsonDumps) {
  EXPECT_EQ(render("{{ v | tojson }}\n{{ v | tojson(indent=2) }}\n{{ v | tojson(separators=(',', ':')) }}\n"
                   "{{ v | tojson(ensure_ascii=true) }}",
                   R"({"v": {"name": "café \"x\"", "n": [1, 2.5, null, true], "e": {}, "l": []}})"),
            "{\"name\": \"café \\\"x\\\"\", \"n\": [1, 2.5, null, true], \"e\": {}, \"l\": []}\n"
            "{\n  \"name\": \"café \\\"x\\\"\",\n  \"n\": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n  \"e\": {},\n  \"l\": []\n}\n"
            "{\"name\":\"café \\\"x\\\"\",\"n\":[1,2.5,null,true],\"e\":{},\"l\":[]}\n"
            "{\"name\": \"caf\\u00e9 \\\"x\\\"\", \"n\": [1, 2.5, null, true], \"e\": {}, \"l\": []}");
}

TEST(JinjaInterpreter, PythonValuesAndOperators) {
  EXPECT_EQ(render(R"({{ [1, 'a', None, True, 1.0] }} {{ {'k': 'it\'s'} }} {{ (1,) }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} )"
                   R"({{ 10 / 4 }} {{ 'ab' * 2 }} {{ 1 ~ none }})"),
            "[1, 'a', None, True, 1.0] {'k': \"it's\"} (1,) 3 2 1024 2.5 abab 1None");
}

TEST(JinjaInterpreter, StringMethodsAndFilters) {
  EXPECT_EQ(render("{{ '  x  ' | trim }}|{{ 'a,b,,c'.split(',') }}|{{ '  a  b '.split() }}|{{ 'xxhixx'.strip('x') }}|"
                   "{{ 'Hello'.startswith(('He', 'x')) }}|{{ '{} and {}'.format(1, 'two') }}|{{ 'a-b c'.title() }}|"
                   "{{ 'hello world' | title }}"),
            "x|['a', 'b', '', 'c']|['a', 'b']|hi|True|1 and two|A-B C|Hello World");
  EXPECT_EQ(render("{{ users | selectattr('active') | map(attribute='name') | join(', ') }}|"
                   "{{ users | rejectattr('active') | list | length }}|{{ users | map(attribute='name') | map('upper') | list }}|"
                   "{{ ['b', 'A', 'a', 'c'] | unique | list }}|{{ ['b', 'A', 'c'] | sort }}|{{ {'b': 1, 'a': 2} | dictsort }}",
                   R"({"users": [{"name": "ann", "active": true}, {"name": "bob", "active": false}, {"name": "cy", "active": true}]})"),
            "ann, cy|1|['ANN', 'BOB', 'CY']|['b', 'A', 'c']|['A', 'b', 'c']|[('a', 2), ('b', 1)]");
  EXPECT_EQ(render(R"({{ 'line1\nline2\n\nline4' | indent(2) }}|{{ 'a\nb' | indent(4, first=true) }})"),
            "line1\n  line2\n\n  line4|    a\n    b");
  // |safe makes a Markup, and Markup + str HTML-escapes the str (Functionary v3.1's tool list does this).
  EXPECT_EQ(render(R"({{ 'Use \'' | safe + name + '\'' }})", R"({"name": "<tool>"})"), "Use '&lt;tool&gt;&#39;");
}

TEST(JinjaInterpreter, TestsDefaultsAndUndefined) {
  EXPECT_EQ(render("{{ missing }}|{{ missing | default('d') }}|{{ '' | default('e', true) }}|{{ missing is defined }}|"
                   "{{ none is none }}|{{ 3 is divisibleby 3 }}|{{ 'x' in 'xyz' }}|{{ 2 not in [1, 3] }}|{{ {} is mapping }}|"
                   "{{ 'a' is string }}|{{ 1.5 is float }}|{{ true is boolean }}"),
            "|d|e|False|True|True|True|True|True|True|True|True");
  EXPECT_NE(error_of("{{ missing.attribute }}").find("'missing' is undefined"), std::string::npos);
}

TEST(JinjaInterpreter, StrftimeNowUsesTheGivenDay) { EXPECT_EQ(render("{{ strftime_now('%d %B %Y') }}"), "26 July 2024"); }

TEST(JinjaInterpreter, ErrorsNameTheLineAndTheConstruct) {
  EXPECT_NE(error_of("a\n{% include 'x.jinja' %}").find("line 2: the statement 'include' is not supported"), std::string::npos);
  EXPECT_NE(error_of("{% for x in y recursive %}{% endfor %}").find("a recursive for loop is not supported"), std::string::npos);
  EXPECT_NE(error_of("{{ '%s' % 1 }}").find("printf-style string formatting"), std::string::npos);
  // jinja2 refuses an unknown filter when compiling, unless it sits inside an if (then when it runs).
  EXPECT_NE(error_of("{{ x | from_json }}").find("line 1: no filter named 'from_json'"), std::string::npos);
  EXPECT_EQ(render("{% if x is string %}{{ x | from_json }}{% endif %}ok", R"({"x": 1})"), "ok");
  EXPECT_NE(error_of("{% if x is string %}{{ x | from_json }}{% endif %}", R"({"x": "1"})").find("from_json"), std::string::npos);
  EXPECT_NE(error_of("\n\n{{ raise_exception('Roles must alternate') }}").find("line 3: the template raised an exception: Roles must alternate"),
            std::string::npos);
  EXPECT_NE(error_of("{{ [1].append(2) }}").find("unsafe"), std::string::npos);  // the immutable sandbox
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
  EXPECT_NE(error_of("{% if x %}").find("missing {% endif %}"), std::string::npos);
}

}  // namespace
}  // namespace nucleus
