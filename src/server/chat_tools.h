// The chat request's tools, tool_choice and messages as the model's template and the constraint see
// them (OpenAI chat API):
//   tools: [{"type": "function", "function": {"name", "description"?, "parameters"? (JSON Schema), "strict"?}}]
//   tool_choice: "none" | "auto" (default when tools are given) | "required" |
//                {"type": "function", "function": {"name": NAME}}
//   parallel_tool_calls: bool (default true)
//   messages: system/developer, user, assistant (content, tool_calls [{id, type, function: {name,
//             arguments: JSON text}}], reasoning_content), tool (content, tool_call_id)
// Assistant tool-call arguments reach the template as JSON objects (parsed from the string OpenAI
// sends), since the templates print them with tojson or iterate over them (Qwen3.5's |items).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/tool_call_format.h"

namespace nucleus::server {

enum class ToolChoice { none, automatic, required, named };

struct ToolRequest {
  nlohmann::ordered_json tools = nullptr;  // the validated tools array, or null when none were given
  ToolChoice choice = ToolChoice::none;
  std::string function;                    // ToolChoice::named: the function's name
  bool parallel = true;

  bool calls_possible() const { return !tools.is_null() && choice != ToolChoice::none; }
};

// Throws ApiError 400 naming the field for any malformed part (a tool without a name, tool_choice
// naming a function not in tools, tool_choice without tools, ...).
ToolRequest parse_tool_request(const nlohmann::ordered_json& body);

// The messages in the JSON form the template renders (see the header comment). Throws ApiError 400
// naming messages[i].field for a malformed message.
nlohmann::ordered_json parse_chat_messages(const nlohmann::ordered_json& body);

// For the generic format: a system text telling the model the tools and the JSON it must answer with
// to call them; put in front of the conversation's own system message (or as one).
std::string generic_tool_instructions(const ToolRequest& tools);
void add_system_text(nlohmann::ordered_json& messages, const std::string& text);

}  // namespace nucleus::server
