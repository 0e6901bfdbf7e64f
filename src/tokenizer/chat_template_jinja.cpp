// Rendering a conversation with the model's own Jinja template, and the choice between that and a
// family renderer.
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja_interpreter.h"

namespace nucleus {

namespace {

using nlohmann::ordered_json;

// The variables transformers' apply_chat_template hands the template: messages, tools (None when
// there are none), documents (None: nucleus has no RAG documents), add_generation_prompt, the special
// tokens, then the caller's kwargs.
jinja::Dict template_variables(const ChatTemplate& chat_template, const ordered_json& messages, bool add_generation_prompt,
                               const ordered_json& kwargs, const ordered_json& tools) {
  using jinja::Value;
  jinja::Dict variables;
  variables.set(Value::from_string("messages"), jinja::value_from_json(messages));
  variables.set(Value::from_string("tools"), jinja::value_from_json(tools));
  variables.set(Value::from_string("documents"), Value::none());
  variables.set(Value::from_string("add_generation_prompt"), Value::from_bool(add_generation_prompt));
  variables.set(Value::from_string("bos_token"), Value::from_string(chat_template.bos_token));
  variables.set(Value::from_string("eos_token"), Value::from_string(chat_template.eos_token));
  for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
    const std::string& key = it.key();
    if (key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt")
      throw Error("chat_template_kwargs cannot set '" + key + "'");
    variables.set(Value::from_string(key), jinja::value_from_json(it.value()));
  }
  return variables;
}

// The family renderers take plain role/content messages.
std::vector<ChatMessage> plain_messages(const ordered_json& messages) {
  std::vector<ChatMessage> out;
  for (const ordered_json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw Error("a chat message must be an object with a string 'role'");
    for (auto it = m.begin(); it != m.end(); ++it)
      if (it.key() != "role" && it.key() != "content")
        throw Error("message field '" + it.key() +
                    "' needs the model's own chat template (a template chosen by name takes role and content only)");
    ChatMessage message{m["role"].get<std::string>(), ""};
    if (m.contains("content") && !m["content"].is_null()) {
      if (!m["content"].is_string()) throw Error("a family chat template takes string message content only");
      message.content = m["content"].get<std::string>();
    }
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace

ChatTemplate chat_template_from_jinja(std::string_view jinja) {
  auto parsed = std::make_shared<const jinja::JinjaTemplate>(jinja);
  ChatTemplate chat_template = make_chat_template(detect_chat_template(jinja).value_or(ChatTemplateKind::chatml));
  chat_template.jinja = std::move(parsed);
  chat_template.source = std::string(jinja);
  return chat_template;
}

std::string chat_template_label(const ChatTemplate& chat_template) {
  return chat_template.jinja ? "jinja" : chat_template_name(chat_template.kind);
}

std::string render_chat_json(const ChatTemplate& chat_template, const ordered_json& messages, bool add_generation_prompt,
                             const ordered_json& chat_template_kwargs, const ordered_json& tools) {
  if (!messages.is_array()) throw Error("chat messages must be a list");
  if (!chat_template_kwargs.is_object()) throw Error("chat_template_kwargs must be an object");
  if (!tools.is_null() && !tools.is_array()) throw Error("tools must be a list");
  if (chat_template.jinja) {
    jinja::RenderOptions options;
    options.now = chat_template.now;
    return chat_template.jinja->render(
        template_variables(chat_template, messages, add_generation_prompt, chat_template_kwargs, tools), options);
  }
  if (!tools.is_null() && !tools.empty())
    throw Error(std::string("the ") + chat_template_name(chat_template.kind) +
                " chat template (chosen by name) cannot render tools; use the model's own template");
  std::optional<bool> enable_thinking;
  for (auto it = chat_template_kwargs.begin(); it != chat_template_kwargs.end(); ++it) {
    if (it.key() != "enable_thinking" || !it.value().is_boolean())
      throw Error("chat_template_kwargs '" + it.key() + "' is not supported by the " + chat_template_name(chat_template.kind) +
                  " chat template (chosen by name; supported: enable_thinking, a boolean)");
    enable_thinking = it.value().get<bool>();
  }
  return render_chat_family(chat_template, plain_messages(messages), add_generation_prompt, enable_thinking);
}

ordered_json chat_messages_to_json(const std::vector<ChatMessage>& messages) {
  ordered_json out = ordered_json::array();
  for (const ChatMessage& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

std::string render_chat(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, std::optional<bool> enable_thinking) {
  if (!chat_template.jinja) return render_chat_family(chat_template, messages, add_generation_prompt, enable_thinking);
  ordered_json kwargs = ordered_json::object();
  if (enable_thinking) kwargs["enable_thinking"] = *enable_thinking;
  return render_chat_json(chat_template, chat_messages_to_json(messages), add_generation_prompt, kwargs, nullptr);
}

}  // namespace nucleus
