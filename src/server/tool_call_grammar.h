// GBNF grammars (llama.cpp's dialect, read by parse_gbnf) that constrain a model's output to valid
// tool calls written the way its family writes them (tool_call_format.h): the right tags, one of
// the request's tools by name, and arguments valid under that tool's "parameters" JSON Schema
// (json_schema_to_gbnf.h, with its documented subset choices: key order, bounded whitespace, ...).
//
// The texts matched, per format (NAME = the tool's name, ARGS = a JSON text valid under its
// parameters schema; JSON names are written as JSON strings, raw names as they are):
//   hermes        <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
//                 parallel: calls separated by "\n"
//   qwen3-xml     <tool_call>\n<function=NAME>\n PARAM* </function>\n</tool_call>
//                 PARAM = <parameter=P>\nVALUE\n</parameter>\n for each property P in the schema's
//                 order, the required ones mandatory and the others optional; VALUE is raw text for
//                 a property of type "string" (any text without "\n</parameter>", or one of its
//                 enum/const strings verbatim) and the property's JSON value otherwise.
//                 parallel: calls separated by "\n"
//   llama3-json   {"name": "NAME", "parameters": ARGS}
//                 always exactly one call: Llama 3.1's template refuses several tool calls in one
//                 message, so `parallel` is ignored
//   mistral       [TOOL_CALLS][{"name": "NAME", "arguments": ARGS}]
//                 parallel: more array items, separated by ", "
//   mistral-args  [TOOL_CALLS]NAME[ARGS]ARGS
//                 parallel: the whole unit repeated, nothing in between
//   generic       {"tool_calls": [{"name": "NAME", "arguments": ARGS}]}
//                 parallel: more array items, separated by ", "
// Every text matched starts with tool_call_trigger(format) and ends right after the last call
// (no trailing newline or end-of-turn token).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/tool_call_format.h"

namespace nucleus::server {

struct ToolCallGrammarOptions {
  ToolCallFormat format = ToolCallFormat::generic;
  // The request's tools: [{"type":"function","function":{"name","description"?,"parameters"?,"strict"?}}].
  nlohmann::ordered_json tools;
  std::optional<std::string> function;  // tool_choice names one function: only it may be called
  bool parallel = true;                 // parallel_tool_calls: one or more calls, else exactly one
  // JSON Schema strict mode for the arguments (additionalProperties defaults to false). A tool's
  // own "function": {"strict": true} turns it on for that tool.
  bool strict = false;
};

// GBNF whose root matches one call (or, with `parallel`, one or more calls) in the format, each
// naming one of the tools (only `function` when set) with arguments valid under its "parameters"
// schema (absent or null parameters: any JSON object; a schema without "type" and without
// combinators is taken as an object schema). Only the callable tools' schemas are compiled.
//
// Throws nucleus::Error (a 400 for the request) with a message naming the tool and the problem:
//   * `tools` is not a non-empty array, an entry is not {"type":"function","function":{"name":
//     non-empty string, ...}}, two tools share a name, "parameters" is not a JSON object, or a
//     name has a character the format cannot carry raw (qwen3-xml: '>' or a newline; mistral-args:
//     '['; all formats: control characters);
//   * `function` names no tool;
//   * a schema json_schema_to_gbnf cannot compile (its message, with the keyword and pointer);
//   * qwen3-xml only: a parameters schema that is not an object with properties (a top-level
//     anyOf/oneOf/allOf/$ref/not, a type other than "object", minProperties, ...), a required name
//     missing from "properties", or a string property with constraints a raw value cannot be held
//     to (pattern, format, minLength, maxLength, ...: the keyword is named).
std::string tool_call_gbnf(const ToolCallGrammarOptions& options);

// A grammar that first lets the model reason, then matches `gbnf`'s root (renamed body-root):
//   starts_in_reasoning = false:  root ::= ("<think>" T "</think>" ws)? body
//   starts_in_reasoning = true:   root ::= T "</think>" ws body   (the prompt already opened <think>)
// where T is any text whose first "</think>" is the closing one (gbnf_text_without) and ws is up
// to 4 spaces or newlines. `gbnf` must have a rule named `root`; its rules are renamed with the
// prefix "body-".
std::string with_reasoning_prefix(const std::string& gbnf, bool starts_in_reasoning);

}  // namespace nucleus::server
