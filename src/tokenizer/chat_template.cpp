// The chat template families by name, the template a model asks for, and how a rendered prompt is
// encoded.
#include "tokenizer/chat_template.h"

#include <ctime>

#include "core/error.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace nucleus {

namespace {

struct FamilyInfo {
  ChatTemplateKind kind;
  const char* name;
  const char* bos_token;  // the family's usual BOS/EOS texts, for templates made by name
  const char* eos_token;
};

constexpr FamilyInfo kFamilies[] = {
    {ChatTemplateKind::chatml, "chatml", "", "<|im_end|>"},
    {ChatTemplateKind::llama2, "llama2", "<s>", "</s>"},
    {ChatTemplateKind::llama3, "llama3", "<|begin_of_text|>", "<|eot_id|>"},
    {ChatTemplateKind::mistral_v1, "mistral-v1", "<s>", "</s>"},
    {ChatTemplateKind::mistral_v3, "mistral-v3", "<s>", "</s>"},
    {ChatTemplateKind::mistral_v3_tekken, "mistral-v3-tekken", "<s>", "</s>"},
    {ChatTemplateKind::phi3, "phi3", "<s>", "<|endoftext|>"},
    {ChatTemplateKind::zephyr, "zephyr", "<s>", "</s>"},
    {ChatTemplateKind::gemma, "gemma", "<bos>", "<eos>"},
    {ChatTemplateKind::deepseek, "deepseek", "<｜begin▁of▁sentence｜>", "<|EOT|>"},
    {ChatTemplateKind::deepseek2, "deepseek2", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
    {ChatTemplateKind::deepseek3, "deepseek3", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
    {ChatTemplateKind::llama31, "llama31", "<|begin_of_text|>", "<|eot_id|>"},
    {ChatTemplateKind::qwen3, "qwen3", "", "<|im_end|>"},
    {ChatTemplateKind::qwen35, "qwen35", "", "<|im_end|>"},
    {ChatTemplateKind::gemma4, "gemma4", "<bos>", "<eos>"},
    {ChatTemplateKind::deepseek_r1, "deepseek-r1", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
};

// Today as strftime("%d %b %Y") writes it in the C locale ("02 Dec 2026"), in UTC.
std::string today_date_string() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%d %b %Y", &utc);
  return buffer;
}

// DeepSeek Coder's template writes this when the conversation has no system message.
constexpr const char* kDeepSeekCoderSystem =
    "You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and you "
    "only answer questions related to computer science. For politically sensitive questions, security and privacy "
    "issues, and other non-computer science questions, you will refuse to answer\n";

const FamilyInfo& family(ChatTemplateKind kind) {
  for (const FamilyInfo& info : kFamilies)
    if (info.kind == kind) return info;
  throw Error("unknown chat template kind");
}

// The start of a template for an error message: one line, at most 60 bytes, no cut character.
std::string excerpt(std::string_view jinja) {
  const std::string_view head = jinja.substr(0, unicode::complete_utf8_prefix_length(jinja.substr(0, 60)));
  std::string out;
  for (char c : head) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  return head.size() < jinja.size() ? out + "..." : out;
}

}  // namespace

const char* chat_template_name(ChatTemplateKind kind) { return family(kind).name; }

std::optional<ChatTemplateKind> chat_template_from_name(std::string_view name) {
  for (const FamilyInfo& info : kFamilies)
    if (name == info.name) return info.kind;
  return std::nullopt;
}

std::string chat_template_names() {
  std::string names;
  for (const FamilyInfo& info : kFamilies) names += (names.empty() ? "" : ", ") + std::string(info.name);
  return names;
}

ChatTemplate make_chat_template(ChatTemplateKind kind) {
  const FamilyInfo& info = family(kind);
  ChatTemplate chat_template;
  chat_template.kind = kind;
  chat_template.bos_token = info.bos_token;
  chat_template.eos_token = info.eos_token;
  if (kind == ChatTemplateKind::deepseek) chat_template.default_system_message = kDeepSeekCoderSystem;
  return chat_template;
}

std::optional<ChatTemplate> chat_template_from_source(std::string_view jinja) {
  const std::optional<ChatTemplateKind> kind = detect_chat_template(jinja);
  if (!kind) return std::nullopt;
  ChatTemplate chat_template = make_chat_template(*kind);
  if (*kind == ChatTemplateKind::chatml) chat_template.default_system_message = chatml_default_system_message(jinja);
  if (*kind == ChatTemplateKind::gemma) chat_template.accepts_system = gemma_accepts_system(jinja);
  if (*kind == ChatTemplateKind::llama31 && jinja.find("strftime_now") != std::string_view::npos)
    chat_template.date_string = today_date_string();
  return chat_template;
}

ChatTemplate chat_template_for_model(const GgufFile& file, const Tokenizer& tokenizer, const std::string& override_name) {
  ChatTemplate chat_template;
  if (!override_name.empty()) {
    const std::optional<ChatTemplateKind> kind = chat_template_from_name(override_name);
    if (!kind) throw Error("unknown chat template '" + override_name + "' (known: " + chat_template_names() + ")");
    chat_template = make_chat_template(*kind);
  } else {
    const MetaValue* source = file.find("tokenizer.chat_template");
    if (!source || source->type != MetaType::STRING || source->str.empty())
      throw Error(file.path() + " has no tokenizer.chat_template; choose one with --chat-template NAME (" +
                  chat_template_names() + ")");
    try {
      chat_template = chat_template_from_jinja(source->str);
    } catch (const Error& e) {
      throw Error(file.path() + ": tokenizer.chat_template (it begins '" + excerpt(source->str) + "'): " + e.what() +
                  "; choose a template with --chat-template NAME (" + chat_template_names() + ")");
    }
  }
  // The Jinja source's bos_token / eos_token are the vocabulary's.
  if (tokenizer.bos_id() >= 0) chat_template.bos_token = tokenizer.token_text(tokenizer.bos_id());
  if (tokenizer.eos_id() >= 0) chat_template.eos_token = tokenizer.token_text(tokenizer.eos_id());
  return chat_template;
}

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, std::string_view rendered) {
  std::vector<int32_t> tokens = tokenizer.encode(rendered, /*add_special=*/false, /*parse_special=*/true);
  const int32_t bos = tokenizer.bos_id();
  if (tokenizer.add_bos() && bos >= 0 && (tokens.empty() || tokens.front() != bos)) tokens.insert(tokens.begin(), bos);
  return tokens;
}

}  // namespace nucleus
