// A chat model's generated text → reasoning, content and OpenAI tool calls, whole or streamed.
//
// Reasoning (ChatOutputOptions::reasoning):
//   [ws]<think>REASONING</think>[ws]REST     the block must open the output (after optional whitespace),
//                                           or the prompt already opened it (starts_in_reasoning:
//                                           the output is REASONING</think>REST). The whitespace
//                                           right after </think> is dropped; a block without
//                                           </think> is reasoning to the end. Tool calls are
//                                           looked for in REST only. Without `reasoning` the tags
//                                           are ordinary content.
//
// Tool calls in REST (ChatOutputOptions::tool_format; none: all of REST is content):
//   hermes       <tool_call>{"name": "f", "arguments": {...}}</tool_call>     (whitespace around the
//                JSON optional; "arguments" may also be a JSON string holding an object; several
//                blocks are parallel calls; text between blocks is content)
//   qwen3-xml    <tool_call>\n<function=f>\n<parameter=p>\nVALUE\n</parameter>\n</function>\n</tool_call>
//                one newline on each side of VALUE is stripped; VALUE is a JSON string when the
//                tool's schema gives p the type "string" (or VALUE is not JSON), else parsed JSON
//                (True/False/None accepted for non-string types). A missing </parameter> ends the
//                value at the next <parameter= or </function>.
//   llama3-json  [<|python_tag|>]{"name": "f", "parameters": {...}}            ("arguments" also
//                accepted, and a leading "type" key). A call opens at <|python_tag|> or at a '{'
//                whose first key is "name" or "type"; from there the rest of the output must be
//                call objects, separated by ';' and/or whitespace — otherwise it is content.
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "abc123xyz"}, ...]
//                (a call's own "id" is kept; a single object instead of the list is one call)
//   mistral-args [TOOL_CALLS]f[ARGS]{...}   or  [TOOL_CALLS]f[CALL_ID]id[ARGS]{...} (id kept);
//                repeated for parallel calls; the mistral list form is accepted too
//   generic      the whole REST (after leading whitespace, before trailing whitespace) is one object
//                whose first key is one of: "tool_calls": [{"name": "f", "arguments": {...}}, ...]
//                / "tool_call": {...} / "response": "text" (→ content "text"). Anything else is
//                content as written.
//
// Malformed calls (invalid JSON, no name, arguments not an object, unterminated at the end) are not
// calls: their text, from the opening marker, stays in content (JSON nested deeper than 256 levels
// counts as invalid). Nothing throws, whatever the input.
// When the output has calls, whitespace next to them is dropped from content: whitespace right before
// a call, whitespace after a call that reaches another call or the end, and whitespace after a call
// that would start the content. (Content that is only whitespace thus becomes empty.)
//
// Streaming: ChatOutputStream is the same parser fed piece by piece. Text that may still turn out
// to be a marker or a call is held back until decided; a call is emitted once complete (its first
// delta carries index, id and name, the next its arguments). llama3-json calls and a generic
// object are only decided at finish() (what follows could still make them content). For every
// split of a text into pieces, the concatenated deltas equal parse_chat_output(text).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_call_format.h"

namespace nucleus::server {

struct ParsedToolCall {
  std::string id;         // "call_" + 24 [A-Za-z0-9] from (id_seed, index); a Mistral call's own id is kept
  std::string name;
  std::string arguments;  // compact JSON object text, "{}" when the call had none
};

struct ChatOutput {
  std::string reasoning_content;  // text inside <think>…</think> (tags removed)
  std::string content;            // everything else that is not a parsed call
  std::vector<ParsedToolCall> tool_calls;
};

struct ChatOutputOptions {
  std::optional<ToolCallFormat> tool_format;  // nullopt: the request had no tools → all text is content
  nlohmann::ordered_json tools = nullptr;     // the request's "tools" (qwen3-xml reads parameter types)
  bool reasoning = false;                     // split <think>…</think> into reasoning_content
  bool starts_in_reasoning = false;           // the prompt already opened <think> (with `reasoning`)
  uint64_t id_seed = 0;
};

ChatOutput parse_chat_output(std::string_view text, const ChatOutputOptions& options);

// "call_" + 24 characters of [A-Za-z0-9], a pure function of (seed, index).
std::string tool_call_id(uint64_t seed, int index);

struct ToolCallDelta {
  int index = 0;             // position of the call in tool_calls
  std::string id, name;      // set (non-empty) only on the call's first delta
  std::string arguments;     // a fragment of the arguments text
};

struct ChatOutputDelta {
  std::string reasoning_content, content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning_content.empty() && content.empty() && tool_calls.empty(); }
};

// Accumulates a stream's delta into a whole output (a call's id and name from its first delta,
// its arguments concatenated).
void append_delta(ChatOutput& output, const ChatOutputDelta& delta);

// Incremental form: feed the generated text piece by piece (whole UTF-8 characters, as a detokenizer
// emits them); every delta holds whole characters. After finish(), feed() ignores its input.
class ChatOutputStream {
 public:
  explicit ChatOutputStream(ChatOutputOptions options);
  ~ChatOutputStream();
  ChatOutputStream(ChatOutputStream&&) noexcept;
  ChatOutputStream& operator=(ChatOutputStream&&) noexcept;

  ChatOutputDelta feed(std::string_view piece);
  ChatOutputDelta finish();  // end of generation: flush what was held back

 private:
  struct State;
  ChatOutputDelta advance(std::string_view piece, bool final);
  std::unique_ptr<State> state_;
};

}  // namespace nucleus::server
