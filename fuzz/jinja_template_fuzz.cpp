// The Jinja interpreter on arbitrary template sources (a model file's tokenizer.chat_template is
// outside input): lexer, parser and interpreter run on the input as the template, rendering a fixed
// conversation with a system prompt, tools, a tool call and its result, and reasoning. A source the
// interpreter cannot parse or run is an Error naming the construct; nothing else may happen.
#include <cstdint>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "tokenizer/chat_template.h"

using namespace nucleus;
using nlohmann::ordered_json;

static volatile size_t sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ordered_json messages = ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "reasoning_content": "Use the tool.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
    {"role": "assistant", "content": "It is 21 degrees."},
    {"role": "user", "content": ["a list", {"type": "text", "text": "content"}]}
  ])");
  static const ordered_json tools = ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"]}}}
  ])");
  static const ordered_json kwargs = {{"enable_thinking", true}, {"reasoning_effort", "low"}};
  fuzz::Input input(data, size);
  const uint8_t control = input.byte();
  const std::string_view source = input.rest();
  try {
    ChatTemplate chat_template = chat_template_from_jinja(source);
    chat_template.bos_token = "<s>";
    chat_template.eos_token = "</s>";
    std::tm day{};
    day.tm_year = 124, day.tm_mon = 6, day.tm_mday = 26;
    chat_template.now = day;
    sink = render_chat_json(chat_template, messages, control & 1, control & 2 ? kwargs : ordered_json::object(),
                            control & 4 ? tools : ordered_json(nullptr))
               .size();
  } catch (const Error&) {
  }
  return 0;
}
