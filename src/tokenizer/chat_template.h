// Chat templates: how a conversation becomes the one prompt text a chat model was trained on.
//
// A GGUF file carries its template as Jinja source (tokenizer.chat_template). That source is what
// renders a model's conversations: nucleus's Jinja interpreter (tokenizer/jinja_interpreter.h) runs it
// as transformers' apply_chat_template does, with messages (any fields the template reads: tool_calls,
// tool_call_id, reasoning_content, ...), tools, add_generation_prompt, bos_token / eos_token and the
// request's chat_template_kwargs as variables — byte for byte what Python's jinja2 renders, or an Error
// where jinja2 raises. A template the interpreter cannot run is an Error naming the construct.
//
// `--chat-template NAME` picks one of the families below instead: C++ renderers that reproduce the
// family's official template for system / user / assistant messages (no tools). They are also what
// detect_chat_template recognizes in a source by distinctive substrings, which tests use to check
// the two paths against each other.
//
// Families, by the names --chat-template accepts:
//   chatml             <|im_start|>role\n…<|im_end|>\n                 Qwen 1.5–3, SmolLM, Yi, OpenHermes
//   llama2             <s>[INST] <<SYS>>\n…\n<</SYS>>\n\n… [/INST] … </s>   Llama 2 chat, CodeLlama instruct
//   llama3             <|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>   Llama 3, 3.1, 3.2, 3.3
//   mistral-v1         <s> [INST] … [/INST] …</s>                      Mistral 7B v0.1/v0.2, Mixtral 8x7B
//   mistral-v3         <s>[INST] …[/INST] …</s>                        Mistral 7B v0.3, Mixtral 8x22B, Large 2407
//   mistral-v3-tekken  <s>[INST]…[/INST]…</s>                          Mistral Nemo, Pixtral, Ministral
//   phi3               <|role|>\n…<|end|>\n                            Phi-3, Phi-3.5
//   zephyr             <|role|>\n…EOS\n                                Zephyr, StableLM 2 Zephyr
//   gemma              <bos><start_of_turn>user\n…<end_of_turn>\n      Gemma 1–3 (assistant is "model")
//   deepseek           ### Instruction:\n…\n### Response:\n…\n<|EOT|>\n   DeepSeek Coder instruct
//   deepseek2          User: …\n\nAssistant: …EOS                      DeepSeek LLM chat, DeepSeek V2
//   deepseek3          <｜User｜>…<｜Assistant｜>…<｜end▁of▁sentence｜>   DeepSeek V2.5, V3
//   llama31            llama3 after a system turn "Cutting Knowledge Date: …\nToday Date: …"   Llama 3.1, 3.2, 3.3
//   qwen3              chatml; <think>…</think> kept only after the last user turn;           Qwen3
//                      enable_thinking=false → an empty think block opens the answer
//   qwen35             qwen3, every message trimmed, the answer opens "<think>\n"            Qwen3.5
//   deepseek-r1        deepseek3 with the last system message, answers without reasoning,   DeepSeek R1 distills
//                      and the answer opening "<think>\n"
//   gemma4             <bos><|turn>user\n…<turn|>\n, an empty thought channel unless thinking   Gemma 4
// Each family follows its official template's quirks, e.g. Mistral v3 puts the system message in front
// of the last user message (so history changes as a conversation grows), Gemma and Mistral v1 fold it
// into the first user message, Llama 3 and Gemma trim every message.
//
// Encoding a rendered prompt (encode_chat_prompt): the text holds special-token text the template wrote
// ("<|im_start|>", "<|begin_of_text|>"), so it is tokenized with parse_special = true; a BOS id is put in
// front only when the vocabulary asks for one (add_bos) and the text did not already start with it — the
// Llama 2/3, Mistral, Gemma and DeepSeek templates write the BOS text themselves — so there is never a
// double BOS; EOS is never appended (the model is to continue, not to stop).
#pragma once
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace nucleus {

class GgufFile;
class Tokenizer;
namespace jinja {
class JinjaTemplate;
}

enum class ChatTemplateKind {
  chatml,
  llama2,
  llama3,
  mistral_v1,
  mistral_v3,
  mistral_v3_tekken,
  phi3,
  zephyr,
  gemma,
  deepseek,
  deepseek2,
  deepseek3,
  llama31,
  qwen3,
  qwen35,
  gemma4,
  deepseek_r1,
};

// role: "system", "user" or "assistant" (anything else is an Error when rendered).
struct ChatMessage {
  std::string role;
  std::string content;
};

// A family plus what its Jinja template takes from the model.
struct ChatTemplate {
  ChatTemplateKind kind = ChatTemplateKind::chatml;
  // What the Jinja source calls bos_token / eos_token: the vocabulary's BOS/EOS texts.
  std::string bos_token;
  std::string eos_token;
  // The system message the official template writes when the conversation does not start with one
  // (Qwen2's "You are a helpful assistant", DeepSeek Coder's); empty: none.
  std::string default_system_message;
  // Gemma 2's template raises on a system message (Gemma 3's folds it into the first user turn).
  bool accepts_system = true;
  // llama31: the "Today Date" it writes (Llama 3.1's fixed "26 Jul 2024"; templates that call
  // strftime_now, like Llama 3.2's, get the day the template was made for a model).
  std::string date_string = "26 Jul 2024";
  // The model's own template, run by the Jinja interpreter; null for a family chosen by name (rendered by
  // its C++ family renderer). Shared: a parsed template is immutable.
  std::shared_ptr<const jinja::JinjaTemplate> jinja;
  std::string source;  // that template's Jinja text (what tool-call formats and thinking are read from)
  // What the Jinja template's strftime_now formats: nullopt is the local time at rendering; tests fix it.
  std::optional<std::tm> now;
};

// "chatml", "llama2", …, "mistral-v3-tekken" (the table above).
const char* chat_template_name(ChatTemplateKind kind);
std::optional<ChatTemplateKind> chat_template_from_name(std::string_view name);
// Every name, comma-separated, for help texts and error messages.
std::string chat_template_names();

// The family of a Jinja chat template, or nullopt when it is none we render (unknown families and
// look-alikes such as Phi-4's <|im_sep|> ChatML or Mistral v7's [SYSTEM_PROMPT]). A template that is
// just a family name ("chatml") is that family.
std::optional<ChatTemplateKind> detect_chat_template(std::string_view jinja);
// The system message a ChatML template writes when the conversation has none, read from its source
// ('<|im_start|>system\nYou are a helpful assistant<|im_end|>\n'); empty when it writes none.
std::string chatml_default_system_message(std::string_view jinja);
// False for a Gemma template that refuses system messages (Gemma 2's "System role not supported").
bool gemma_accepts_system(std::string_view jinja);

// The family with its usual BOS/EOS texts ("<s>", "</s>", "<bos>", …) and built-in system message.
ChatTemplate make_chat_template(ChatTemplateKind kind);

// The family of a Jinja source with what the source itself sets (ChatML's default system message,
// Gemma 2's refusal of system messages, Llama 3.2's date of today); nullopt as detect_chat_template.
std::optional<ChatTemplate> chat_template_from_source(std::string_view jinja);

// A Jinja source as the model's template: parsed once (an Error names the line and construct the
// interpreter does not support); `kind` is the family it resembles (chatml when none), for messages only.
ChatTemplate chat_template_from_jinja(std::string_view jinja);

// The template for a model: `override_name` when not empty (an unknown name is an Error listing the
// known ones), else the file's tokenizer.chat_template run by the Jinja interpreter (a missing template,
// or one the interpreter cannot parse, is an Error that names the file and suggests --chat-template).
// BOS/EOS texts come from the tokenizer.
ChatTemplate chat_template_for_model(const GgufFile& file, const Tokenizer& tokenizer, const std::string& override_name);

// What `nucleus chat` calls the template: "jinja" for the model's own, else the family's name.
std::string chat_template_label(const ChatTemplate& chat_template);

// The prompt text for a conversation in the chat API's JSON form. messages: objects with "role",
// "content" and whatever else the template reads (tool_calls with function arguments as an object or a
// JSON string, tool_call_id, name, reasoning_content). tools: the request's tool definitions, or null
// (the template then sees None, as transformers passes it). chat_template_kwargs: an object whose keys
// become template variables (enable_thinking, reasoning_effort, ...; the request's variables
// messages/tools/documents/add_generation_prompt cannot be replaced). Objects keep their key order
// (ordered_json), since templates print them with tojson.
// A family template (chosen by name) renders only role/content messages of system/user/assistant,
// no tools, and of the kwargs only enable_thinking; anything else is an Error.
std::string render_chat_json(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                             bool add_generation_prompt,
                             const nlohmann::ordered_json& chat_template_kwargs = nlohmann::ordered_json::object(),
                             const nlohmann::ordered_json& tools = nullptr);

// Role/content messages in the JSON form render_chat_json takes.
nlohmann::ordered_json chat_messages_to_json(const std::vector<ChatMessage>& messages);

// The prompt text for `messages`; with add_generation_prompt, followed by what opens the assistant's
// turn. The model's Jinja template renders them as render_chat_json does; a family template renders
// them as render_chat_family does.
// enable_thinking: the template variable of reasoning models (Qwen3, Gemma 4; chat_template_kwargs
// in requests); nullopt leaves it undefined, as a caller that does not pass it.
std::string render_chat(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, std::optional<bool> enable_thinking = std::nullopt);

// The C++ renderer of chat_template.kind (its Jinja template, if any, is not used). Families whose
// user turn already ends in the assistant's cue, like [/INST], add nothing for add_generation_prompt.
// Throws Error for a role other than system/user/assistant, and for a system message after the first
// message in families that can only place one at the start (llama2, mistral-*, gemma). Families other
// than Qwen3/Qwen3.5/Gemma 4 ignore enable_thinking.
std::string render_chat_family(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt, std::optional<bool> enable_thinking = std::nullopt);
inline std::string render_chat(ChatTemplateKind kind, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt, std::optional<bool> enable_thinking = std::nullopt) {
  return render_chat_family(make_chat_template(kind), messages, add_generation_prompt, enable_thinking);
}

// Token ids of a rendered prompt, encoded as the header comment says (parse_special, BOS once, no EOS).
std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, std::string_view rendered);

}  // namespace nucleus
