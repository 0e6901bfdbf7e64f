// Tool-call output parsers (server/chat_output_parser): a model's generated text read as reasoning,
// content and tool calls in every format (hermes, qwen3-xml, llama3-json, mistral, mistral-args,
// generic, or none), whole and streamed. Byte 0 picks the format and the reasoning flags, byte 1 the
// seed of the stream's cut points; the rest is the text. Checked (the documented contract): nothing
// throws, and for every split into pieces (at character boundaries) the streamed deltas add up to
// parse_chat_output of the whole text.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "server/chat_output_parser.h"
#include "server/tool_call_format.h"

using namespace nucleus;
using namespace nucleus::server;

static volatile size_t sink;

static bool same(const ChatOutput& a, const ChatOutput& b) {
  if (a.reasoning_content != b.reasoning_content || a.content != b.content || a.tool_calls.size() != b.tool_calls.size())
    return false;
  for (size_t i = 0; i < a.tool_calls.size(); ++i)
    if (a.tool_calls[i].id != b.tool_calls[i].id || a.tool_calls[i].name != b.tool_calls[i].name ||
        a.tool_calls[i].arguments != b.tool_calls[i].arguments)
      return false;
  return true;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "units": {"type": ["string", "null"]},
                     "options": {"type": "object"}}}}},
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": {"type": "number"}}}}}
  ])");
  fuzz::Input input(data, size);
  const uint8_t control = input.byte();
  uint32_t cut_state = input.byte() * 2654435761u + 1;
  const std::string_view text = input.rest();

  ChatOutputOptions options;
  if (control % 7 < 6) options.tool_format = static_cast<ToolCallFormat>(control % 7);
  options.tools = control & 0x40 ? nlohmann::ordered_json(nullptr) : tools;
  options.reasoning = control & 0x10;
  options.starts_in_reasoning = control & 0x20;
  options.id_seed = control;

  const ChatOutput whole = parse_chat_output(text, options);
  sink = whole.content.size() + whole.tool_calls.size();

  ChatOutputStream stream(options);
  ChatOutput streamed;
  size_t pos = 0;
  while (pos < text.size()) {
    cut_state = cut_state * 1103515245u + 12345u;
    size_t end = pos + 1 + (cut_state >> 16) % 12;
    if (end > text.size()) end = text.size();
    // Whole characters, as a detokenizer emits them: never cut before a continuation byte.
    while (end < text.size() && (static_cast<uint8_t>(text[end]) & 0xc0) == 0x80) ++end;
    append_delta(streamed, stream.feed(text.substr(pos, end - pos)));
    pos = end;
  }
  append_delta(streamed, stream.finish());
  if (!same(whole, streamed)) {
    std::fprintf(stderr, "whole:    content=[%s] reasoning=[%s] calls=%zu\nstreamed: content=[%s] reasoning=[%s] calls=%zu\n",
                 whole.content.c_str(), whole.reasoning_content.c_str(), whole.tool_calls.size(), streamed.content.c_str(),
                 streamed.reasoning_content.c_str(), streamed.tool_calls.size());
    FUZZ_CHECK(false, "the streamed deltas differ from parse_chat_output");
  }
  return 0;
}
