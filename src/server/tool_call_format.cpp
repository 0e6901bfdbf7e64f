#include "server/tool_call_format.h"

#include <array>
#include <utility>

namespace nucleus::server {

namespace {

constexpr std::array<std::pair<ToolCallFormat, const char*>, 6> kNames{{
    {ToolCallFormat::hermes, "hermes"},
    {ToolCallFormat::qwen3_xml, "qwen3-xml"},
    {ToolCallFormat::llama3_json, "llama3-json"},
    {ToolCallFormat::mistral, "mistral"},
    {ToolCallFormat::mistral_args, "mistral-args"},
    {ToolCallFormat::generic, "generic"},
}};

bool has(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  for (const auto& [f, name] : kNames)
    if (f == format) return name;
  return "generic";
}

std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name) {
  for (const auto& [f, n] : kNames)
    if (name == n) return f;
  return std::nullopt;
}

std::string tool_call_format_names() {
  std::string out;
  for (const auto& [f, name] : kNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

ToolCallFormat detect_tool_call_format(std::string_view source) {
  if (has(source, "<tool_call>") && has(source, "<function=")) return ToolCallFormat::qwen3_xml;
  if (has(source, "<tool_call>")) return ToolCallFormat::hermes;
  if (has(source, "[TOOL_CALLS]") && has(source, "[ARGS]")) return ToolCallFormat::mistral_args;
  if (has(source, "[TOOL_CALLS]")) return ToolCallFormat::mistral;
  if (has(source, "<|python_tag|>") || has(source, "\"parameters\": ")) return ToolCallFormat::llama3_json;
  return ToolCallFormat::generic;
}

std::string tool_call_trigger(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::hermes:
    case ToolCallFormat::qwen3_xml: return "<tool_call>";
    case ToolCallFormat::llama3_json: return "{\"name\"";
    case ToolCallFormat::mistral:
    case ToolCallFormat::mistral_args: return "[TOOL_CALLS]";
    case ToolCallFormat::generic: return "{\"tool_calls\"";
  }
  return "";
}

}  // namespace nucleus::server
