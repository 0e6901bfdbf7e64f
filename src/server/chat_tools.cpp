#include "server/chat_tools.h"

#include "server/api_error.h"

namespace nucleus::server {

using nlohmann::ordered_json;

namespace {

const ordered_json* member(const ordered_json& object, const char* name) {
  auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// OpenAI's rule for function names: a-z, A-Z, 0-9, underscores and dashes, at most 64.
bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// Whether object[key] is the string `value` (false when absent or of another type; json's value()
// would throw a type_error, a 500, for a non-string member).
bool member_equals(const ordered_json& object, const char* key, const char* value) {
  const ordered_json* m = member(object, key);
  return m && m->is_string() && m->get_ref<const std::string&>() == value;
}

std::string content_text(const ordered_json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) {  // content parts: only text ones
    std::string text;
    for (const ordered_json& part : content) {
      const ordered_json* t = part.is_object() ? member(part, "text") : nullptr;
      if (!part.is_object() || !member_equals(part, "type", "text") || !t || !t->is_string())
        throw invalid_param(where, "'" + where + "' parts must be {\"type\": \"text\", \"text\": string}");
      text += t->get<std::string>();
    }
    return text;
  }
  throw invalid_param(where, "'" + where + "' must be a string or a list of text parts");
}

ordered_json parse_tool_calls(const ordered_json& calls, const std::string& where) {
  if (!calls.is_array()) throw invalid_param(where, "'" + where + "' must be a list");
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const ordered_json& call = calls[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!call.is_object()) throw invalid_param(at, "'" + at + "' must be an object");
    const ordered_json* function = member(call, "function");
    if (!function || !function->is_object()) throw invalid_param(at + ".function", "'" + at + ".function' must be an object");
    const ordered_json* name = member(*function, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      throw invalid_param(at + ".function.name", "'" + at + ".function.name' must be a non-empty string");
    ordered_json arguments = ordered_json::object();
    if (const ordered_json* a = member(*function, "arguments")) {
      if (a->is_string()) {
        arguments = ordered_json::parse(a->get<std::string>(), nullptr, false);
        if (arguments.is_discarded() || !arguments.is_object())
          throw invalid_param(at + ".function.arguments", "'" + at + ".function.arguments' must be a JSON object in a string");
      } else if (a->is_object()) {
        arguments = *a;
      } else {
        throw invalid_param(at + ".function.arguments", "'" + at + ".function.arguments' must be a JSON object in a string");
      }
    }
    ordered_json c = ordered_json::object();
    if (const ordered_json* id = member(call, "id")) {
      if (!id->is_string()) throw invalid_param(at + ".id", "'" + at + ".id' must be a string");
      c["id"] = *id;
    }
    c["type"] = "function";
    c["function"] = {{"name", *name}, {"arguments", std::move(arguments)}};
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

ToolRequest parse_tool_request(const ordered_json& body) {
  ToolRequest request;
  if (const ordered_json* tools = member(body, "tools")) {
    if (!tools->is_array()) throw invalid_param("tools", "'tools' must be a list");
    if (tools->size() > 128) throw invalid_param("tools", "'tools' may hold at most 128 functions");
    for (size_t i = 0; i < tools->size(); ++i) {
      const ordered_json& tool = (*tools)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object()) throw invalid_param(at, "'" + at + "' must be an object");
      if (!member_equals(tool, "type", "function"))
        throw invalid_param(at + ".type", "'" + at + ".type' must be \"function\" (the only tool type supported)");
      const ordered_json* function = member(tool, "function");
      if (!function || !function->is_object()) throw invalid_param(at + ".function", "'" + at + ".function' must be an object");
      const ordered_json* name = member(*function, "name");
      if (!name || !name->is_string() || !valid_function_name(name->get<std::string>()))
        throw invalid_param(at + ".function.name", "'" + at +
                                                      ".function.name' must be 1-64 letters, digits, underscores, dots or dashes");
      for (size_t j = 0; j < i; ++j)
        if ((*tools)[j]["function"]["name"] == *name)
          throw invalid_param(at + ".function.name", "two tools are named '" + name->get<std::string>() + "'");
      if (const ordered_json* d = member(*function, "description"); d && !d->is_string())
        throw invalid_param(at + ".function.description", "'" + at + ".function.description' must be a string");
      if (const ordered_json* p = member(*function, "parameters"); p && !p->is_object())
        throw invalid_param(at + ".function.parameters", "'" + at + ".function.parameters' must be a JSON Schema object");
    }
    if (!tools->empty()) request.tools = *tools;
  }
  request.choice = request.tools.is_null() ? ToolChoice::none : ToolChoice::automatic;
  if (const ordered_json* choice = member(body, "tool_choice")) {
    if (choice->is_string()) {
      const std::string c = choice->get<std::string>();
      if (c == "none") request.choice = ToolChoice::none;
      else if (c == "auto") request.choice = ToolChoice::automatic;
      else if (c == "required") request.choice = ToolChoice::required;
      else throw invalid_param("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function");
    } else if (choice->is_object()) {
      const ordered_json* function = member(*choice, "function");
      const ordered_json* name = function && function->is_object() ? member(*function, "name") : nullptr;
      if (choice->value("type", "") != "function" || !name || !name->is_string())
        throw invalid_param("tool_choice", "'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": NAME}}");
      request.choice = ToolChoice::named;
      request.function = name->get<std::string>();
    } else {
      throw invalid_param("tool_choice", "'tool_choice' must be a string or an object");
    }
    if (request.choice != ToolChoice::none && request.tools.is_null())
      throw invalid_param("tool_choice", "'tool_choice' needs 'tools'");
    if (request.choice == ToolChoice::named) {
      bool found = false;
      for (const ordered_json& tool : request.tools) found = found || tool["function"]["name"] == request.function;
      if (!found) throw invalid_param("tool_choice", "'tool_choice' names '" + request.function + "', which is not in 'tools'");
    }
  }
  if (const ordered_json* parallel = member(body, "parallel_tool_calls")) {
    if (!parallel->is_boolean()) throw invalid_param("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    request.parallel = parallel->get<bool>();
  }
  return request;
}

ordered_json parse_chat_messages(const ordered_json& body) {
  const ordered_json* messages = member(body, "messages");
  if (!messages) throw invalid_param("messages", "'messages' is required");
  if (!messages->is_array() || messages->empty()) throw invalid_param("messages", "'messages' must be a non-empty list");
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const ordered_json& m = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw invalid_param(where, "'" + where + "' must be an object");
    const ordered_json* role = member(m, "role");
    if (!role || !role->is_string()) throw invalid_param(where + ".role", "'" + where + ".role' must be a string");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for it
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      throw invalid_param(where + ".role", "'" + where + ".role' must be system, user, assistant or tool, got '" + r + "'");
    ordered_json message = {{"role", r}};
    const ordered_json* content = member(m, "content");
    const ordered_json* tool_calls = r == "assistant" ? member(m, "tool_calls") : nullptr;
    if (!content && r != "assistant") throw invalid_param(where + ".content", "'" + where + ".content' is required");
    message["content"] = content ? content_text(*content, where + ".content") : "";
    if (tool_calls) message["tool_calls"] = parse_tool_calls(*tool_calls, where + ".tool_calls");
    if (r == "assistant")
      if (const ordered_json* reasoning = member(m, "reasoning_content")) {
        if (!reasoning->is_string())
          throw invalid_param(where + ".reasoning_content", "'" + where + ".reasoning_content' must be a string");
        message["reasoning_content"] = *reasoning;
      }
    if (r == "tool") {
      const ordered_json* id = member(m, "tool_call_id");
      if (id && !id->is_string()) throw invalid_param(where + ".tool_call_id", "'" + where + ".tool_call_id' must be a string");
      if (id) message["tool_call_id"] = *id;
    }
    if (const ordered_json* name = member(m, "name")) {
      if (!name->is_string()) throw invalid_param(where + ".name", "'" + where + ".name' must be a string");
      message["name"] = *name;
    }
    out.push_back(std::move(message));
  }
  return out;
}

std::string generic_tool_instructions(const ToolRequest& tools) {
  std::string text = "You can call these tools (JSON Schema of each function's arguments):\n";
  for (const ordered_json& tool : tools.tools) text += tool["function"].dump() + "\n";
  text += "To call tools, answer with JSON only, in this form: "
          "{\"tool_calls\": [{\"name\": \"<function name>\", \"arguments\": {<arguments>}}]}";
  if (tools.choice == ToolChoice::automatic) text += "\nOtherwise answer the user in plain text.";
  return text;
}

void add_system_text(ordered_json& messages, const std::string& text) {
  if (!messages.empty() && messages[0]["role"] == "system") {
    messages[0]["content"] = text + "\n\n" + messages[0]["content"].get<std::string>();
  } else {
    messages.insert(messages.begin(), ordered_json{{"role", "system"}, {"content", text}});
  }
}

}  // namespace nucleus::server
