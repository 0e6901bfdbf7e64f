// How a model family writes tool calls in its output, and which one a chat template uses.
//
// Formats (the names `--tool-call-parser` accepts):
//   hermes       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>      Qwen 2.5, Qwen3, QwQ, Hermes 2/3
//   qwen3-xml    <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>
//                (string values raw, other values as JSON)                          Qwen3-Coder, Qwen3.5
//   llama3-json  [<|python_tag|>]{"name": "f", "parameters": {...}}                 Llama 3.1, 3.2, 3.3
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]              Mistral Nemo, 7B v0.3, Mixtral 8x22B
//   mistral-args [TOOL_CALLS]f[ARGS]{...}                                          Mistral Small 3.2, Devstral, Ministral 3
//   generic      {"tool_calls": [{"name": "f", "arguments": {...}}, ...]}          any other template: the tools and
//                this format are described to the model in a system message
//
// detect_tool_call_format reads the template source: the first rule that matches wins.
//   "<function=" and "<tool_call>"         → qwen3-xml
//   "<tool_call>"                          → hermes
//   "[TOOL_CALLS]" and "[ARGS]"            → mistral-args
//   "[TOOL_CALLS]"                         → mistral
//   "<|python_tag|>" or '"parameters": '   → llama3-json   (Llama 3.1's and 3.2's templates)
//   anything else                          → generic
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace nucleus::server {

enum class ToolCallFormat { hermes, qwen3_xml, llama3_json, mistral, mistral_args, generic };

const char* tool_call_format_name(ToolCallFormat format);
std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name);
std::string tool_call_format_names();  // comma-separated, for help texts and errors

ToolCallFormat detect_tool_call_format(std::string_view template_source);

// The literal text that opens a call in `format` (what a lazy constraint waits for):
// "<tool_call>", '{"name"' (llama3-json: Llama 3.1 writes custom-tool calls as plain JSON; a leading
// <|python_tag|> is accepted by the parser), "[TOOL_CALLS]", '{"tool_calls"'.
std::string tool_call_trigger(ToolCallFormat format);

}  // namespace nucleus::server
