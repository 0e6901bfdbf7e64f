// Rendering a conversation, family by family (the templates --chat-template NAME picks). Each renderer
// reproduces its official Jinja template (named in its comment) for system/user/assistant messages,
// including where that template trims message text and where it places the system message.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/unicode.h"

namespace nucleus {

namespace {

using Messages = std::vector<ChatMessage>;

// Python's str.isspace() (what Jinja's trim filter and str.strip() remove): ASCII whitespace, the
// information separators 0x1C–0x1F and the Unicode space separators.
bool is_python_whitespace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.strip(). Invalid UTF-8 at either end is not whitespace and stops the stripping.
std::string trim(const std::string& text) {
  size_t begin = 0;
  while (begin < text.size()) {
    size_t next = begin;
    uint32_t codepoint = 0;
    if (!unicode::next_codepoint(text, next, codepoint) || !is_python_whitespace(codepoint)) break;
    begin = next;
  }
  size_t end = text.size();
  while (end > begin) {
    size_t lead = end - 1;  // the last character starts at the last byte that is not a continuation byte
    while (lead > begin && (static_cast<uint8_t>(text[lead]) & 0xC0) == 0x80) --lead;
    size_t next = lead;
    uint32_t codepoint = 0;
    if (!unicode::next_codepoint(text, next, codepoint) || next != end || !is_python_whitespace(codepoint)) break;
    end = lead;
  }
  return text.substr(begin, end - begin);
}

void check_roles(const ChatTemplate& chat_template, const Messages& messages, bool system_only_first) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant")
      throw Error("chat message role '" + role + "' is not supported (use system, user or assistant)");
    if (system_only_first && role == "system" && i > 0)
      throw Error(std::string("the ") + chat_template_name(chat_template.kind) +
                  " chat template accepts a system message only as the first message");
  }
}

// The messages after a leading system message, and that message's content (nullptr when none).
struct SplitSystem {
  const std::string* system = nullptr;
  std::vector<const ChatMessage*> rest;
};
SplitSystem split_leading_system(const Messages& messages) {
  SplitSystem split;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0 && messages[i].role == "system") {
      split.system = &messages[i].content;
    } else {
      split.rest.push_back(&messages[i]);
    }
  }
  return split;
}

// Qwen2 / SmolLM / OpenHermes: '<|im_start|>' + role + '\n' + content + '<|im_end|>' + '\n'.
std::string render_chatml(const Messages& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

// meta-llama/Llama-2-7b-chat-hf: every user turn is bos + '[INST] ' + content.strip() + ' [/INST]',
// every answer ' ' + content.strip() + ' ' + eos. The system block is glued in front of the first
// message's content before strip(), so only that combined text's ends are trimmed.
std::string render_llama2(const ChatTemplate& t, const Messages& messages) {
  const SplitSystem split = split_leading_system(messages);
  std::string out;
  for (size_t i = 0; i < split.rest.size(); ++i) {
    const ChatMessage& m = *split.rest[i];
    std::string content = m.content;
    if (i == 0 && split.system) content = "<<SYS>>\n" + *split.system + "\n<</SYS>>\n\n" + content;
    if (m.role == "user") {
      out += t.bos_token + "[INST] " + trim(content) + " [/INST]";
    } else {
      out += " " + trim(content) + " " + t.eos_token;
    }
  }
  return out;
}

// Meta-Llama-3-8B-Instruct: bos, then '<|start_header_id|>' + role + '<|end_header_id|>\n\n' +
// content|trim + '<|eot_id|>' per message.
std::string render_llama3(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += t.bos_token;
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + trim(messages[i].content) + "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Mistral's v1 template (mistralai cookbook, Mistral-7B-Instruct-v0.1/v0.2): bos, then
// ' [INST] ' + content + ' [/INST]' per user turn — the system message and a blank line in front of the
// first one — and ' ' + content + eos per answer. Nothing is trimmed.
std::string render_mistral_v1(const ChatTemplate& t, const Messages& messages) {
  const SplitSystem split = split_leading_system(messages);
  std::string out = t.bos_token;
  for (size_t i = 0; i < split.rest.size(); ++i) {
    const ChatMessage& m = *split.rest[i];
    if (m.role == "user") {
      const std::string system = (i == 0 && split.system) ? *split.system + "\n\n" : "";
      out += " [INST] " + system + m.content + " [/INST]";
    } else {
      out += " " + m.content + t.eos_token;
    }
  }
  return out;
}

// Mistral-7B-Instruct-v0.3 / Mistral-Large-Instruct-2407 ("v3") and Mistral-Nemo-Instruct-2407
// ("v3-tekken", no spaces and no trimming): the system message goes in front of the user message that
// is the last message of the conversation — and nowhere when the conversation ends with an answer.
std::string render_mistral_v3(const ChatTemplate& t, const Messages& messages, bool tekken) {
  const SplitSystem split = split_leading_system(messages);
  const std::string inst_open = tekken ? "[INST]" : "[INST] ";
  std::string out = t.bos_token;
  for (size_t i = 0; i < split.rest.size(); ++i) {
    const ChatMessage& m = *split.rest[i];
    if (m.role == "user") {
      const bool last = i + 1 == split.rest.size();
      const std::string system = (last && split.system) ? *split.system + "\n\n" : "";
      out += inst_open + system + m.content + "[/INST]";
    } else {
      out += tekken ? m.content + t.eos_token : " " + trim(m.content) + t.eos_token;
    }
  }
  return out;
}

// microsoft/Phi-3.5-mini-instruct: '<|' + role + '|>\n' + content + '<|end|>\n' (an empty system message
// is left out); without a generation prompt the text ends with eos.
std::string render_phi3(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system" && m.content.empty()) continue;
    out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
  }
  out += add_generation_prompt ? "<|assistant|>\n" : t.eos_token;
  return out;
}

// HuggingFaceH4/zephyr-7b-beta: '<|' + role + '|>\n' + content + eos, each followed by the template's
// own line break; the generation prompt is '<|assistant|>' and a line break.
std::string render_zephyr(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + t.eos_token + "\n";
  if (add_generation_prompt && !messages.empty()) out += "<|assistant|>\n";
  return out;
}

// google/gemma-3-*-it (Gemma 1 and 2 share the layout but reject a system message): bos, then
// '<start_of_turn>' + role + '\n' + content|trim + '<end_of_turn>\n' with "model" for the assistant; the
// system message, untrimmed and followed by a blank line, opens the first turn.
std::string render_gemma(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  const SplitSystem split = split_leading_system(messages);
  if (split.system && !t.accepts_system) throw Error("this Gemma chat template does not accept a system message");
  std::string out = t.bos_token;
  for (size_t i = 0; i < split.rest.size(); ++i) {
    const ChatMessage& m = *split.rest[i];
    const std::string role = m.role == "assistant" ? "model" : m.role;
    const std::string prefix = (i == 0 && split.system) ? *split.system + "\n\n" : "";
    out += "<start_of_turn>" + role + "\n" + prefix + trim(m.content) + "<end_of_turn>\n";
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

// meta-llama/Llama-3.1-8B-Instruct (and 3.2, 3.3) without tools: bos, a system turn of
// "Cutting Knowledge Date: December 2023\nToday Date: DATE\n\n" + the system message (trimmed), then
// every other message as Llama 3 writes it (trimmed).
std::string render_llama31(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  const SplitSystem split = split_leading_system(messages);
  std::string out = t.bos_token + "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: " +
                    t.date_string + "\n\n" + (split.system ? trim(*split.system) : "") + "<|eot_id|>";
  for (const ChatMessage* m : split.rest)
    out += "<|start_header_id|>" + m->role + "<|end_header_id|>\n\n" + trim(m->content) + "<|eot_id|>";
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string strip_chars(const std::string& s, char c, bool left, bool right) {
  size_t begin = 0, end = s.size();
  while (left && begin < end && s[begin] == c) ++begin;
  while (right && end > begin && s[end - 1] == c) --end;
  return s.substr(begin, end - begin);
}

// An answer's reasoning and its text, as the Qwen3 templates split "…<think>R</think>\n\nA": R is
// before the first </think> (after its last <think>), A after the last </think>.
struct Reasoned {
  std::string reasoning;
  std::string content;
};
Reasoned split_reasoning(const std::string& text) {
  const size_t first_close = text.find("</think>");
  if (first_close == std::string::npos) return {"", text};
  std::string before = strip_chars(text.substr(0, first_close), '\n', false, true);
  const size_t open = before.rfind("<think>");
  if (open != std::string::npos) before = before.substr(open + 7);
  const size_t last_close = text.rfind("</think>");
  return {strip_chars(before, '\n', true, false), strip_chars(text.substr(last_close + 8), '\n', true, false)};
}

// The last user message (the query the current answer responds to); Qwen3's last_query_index.
size_t last_query_index(const Messages& messages) {
  for (size_t i = messages.size(); i-- > 0;)
    if (messages[i].role == "user") return i;
  return messages.size() - 1;
}

// Qwen/Qwen3-0.6B (every Qwen3 size) without tools: ChatML; an answer after the last user message
// keeps its reasoning in a think block (the last message always gets one), earlier answers lose
// theirs; with enable_thinking=false the generation prompt writes an empty think block.
std::string render_qwen3(const Messages& messages, bool add_generation_prompt, std::optional<bool> enable_thinking) {
  std::string out;
  const size_t query = messages.empty() ? 0 : last_query_index(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "assistant") {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      continue;
    }
    const Reasoned r = split_reasoning(m.content);
    out += "<|im_start|>assistant\n";
    if (i > query && (i + 1 == messages.size() || !r.reasoning.empty())) {
      out += "<think>\n" + strip_chars(r.reasoning, '\n', true, true) + "\n</think>\n\n" + strip_chars(r.content, '\n', true, false);
    } else {
      out += r.content;
    }
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (enable_thinking == false) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

// Qwen/Qwen3.5-4B without tools or images: as Qwen3, but every message is trimmed, a system message
// only opens the conversation, a user message is required, every answer after the last user message
// has its (trimmed) reasoning block, and the generation prompt opens one ("<think>\n") unless
// enable_thinking=false closes it empty.
std::string render_qwen35(const Messages& messages, bool add_generation_prompt, std::optional<bool> enable_thinking) {
  if (std::none_of(messages.begin(), messages.end(), [](const ChatMessage& m) { return m.role == "user"; }))
    throw Error("the Qwen3.5 chat template needs a user message");
  std::string out;
  const size_t query = last_query_index(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const std::string content = trim(m.content);
    if (m.role == "system") {
      if (i > 0) throw Error("the Qwen3.5 chat template accepts a system message only as the first message");
      out += "<|im_start|>system\n" + content + "<|im_end|>\n";
    } else if (m.role == "user") {
      out += "<|im_start|>user\n" + content + "<|im_end|>\n";
    } else {
      const Reasoned r = split_reasoning(content);
      out += "<|im_start|>assistant\n";
      out += i > query ? "<think>\n" + trim(r.reasoning) + "\n</think>\n\n" + r.content : r.content;
      out += "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) out += enable_thinking == false ? "<|im_start|>assistant\n<think>\n\n</think>\n\n" : "<|im_start|>assistant\n<think>\n";
  return out;
}

// An answer's text without Gemma 4's thought channels ("<|channel>…<channel|>"), trimmed.
std::string strip_gemma4_thinking(const std::string& text) {
  std::string result;
  size_t start = 0;
  while (true) {
    const size_t close = text.find("<channel|>", start);
    const std::string part = text.substr(start, close == std::string::npos ? std::string::npos : close - start);
    const size_t open = part.find("<|channel>");
    result += open == std::string::npos ? part : part.substr(0, open);
    if (close == std::string::npos) break;
    start = close + 10;
  }
  return trim(result);
}

// google/gemma-4-31B-it without tools or media: bos; a system turn when there is a system message
// or thinking is on ("<|think|>\n" first); then "<|turn>" + role ("model" for the assistant) + "\n" +
// text (trimmed; answers without their thought channels) + "<turn|>\n", consecutive answers sharing
// one turn header; the generation prompt opens a model turn with an empty thought channel unless
// thinking is on.
std::string render_gemma4(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt,
                          std::optional<bool> enable_thinking) {
  const bool thinking = enable_thinking.value_or(false);
  const SplitSystem split = split_leading_system(messages);
  std::string out = t.bos_token;
  if (thinking || split.system) {
    out += "<|turn>system\n";
    if (thinking) out += "<|think|>\n";
    if (split.system) out += trim(*split.system);
    out += "<turn|>\n";
  }
  for (size_t i = 0; i < split.rest.size(); ++i) {
    const ChatMessage& m = *split.rest[i];
    const bool model = m.role == "assistant";
    if (!(model && i > 0 && split.rest[i - 1]->role == "assistant")) out += "<|turn>" + std::string(model ? "model" : m.role) + "\n";
    out += (model ? strip_gemma4_thinking(m.content) : trim(m.content)) + "<turn|>\n";
  }
  if (add_generation_prompt) {
    out += "<|turn>model\n";
    if (!thinking) out += "<|channel>thought\n<channel|>";
  }
  return out;
}

// deepseek-ai/DeepSeek-R1-Distill-* without tools: bos + the last system message, then
// '<｜User｜>' + content per question and '<｜Assistant｜>' + the text after the answer's last
// </think> + eos per answer; the generation prompt opens the reasoning: '<｜Assistant｜><think>\n'.
std::string render_deepseek_r1(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  std::string system;
  for (const ChatMessage& m : messages)
    if (m.role == "system") system = m.content;
  std::string out = t.bos_token + system;
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      out += "<｜User｜>" + m.content;
    } else if (m.role == "assistant") {
      const size_t close = m.content.rfind("</think>");
      out += "<｜Assistant｜>" + (close == std::string::npos ? m.content : m.content.substr(close + 8)) + "<｜end▁of▁sentence｜>";
    }
  }
  if (add_generation_prompt) out += "<｜Assistant｜><think>\n";
  return out;
}

// deepseek-ai/deepseek-coder-*-instruct: bos; a system message is written as it is, with no separator;
// '### Instruction:\n' + content + '\n' per user turn, '### Response:\n' + content + '\n<|EOT|>\n' per
// answer; the generation prompt is '### Response:' and the template's line break.
std::string render_deepseek(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  std::string out = t.bos_token;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      out += m.content;
    } else if (m.role == "user") {
      out += "### Instruction:\n" + m.content + "\n";
    } else {
      out += "### Response:\n" + m.content + "\n<|EOT|>\n";
    }
  }
  if (add_generation_prompt) out += "### Response:\n";
  return out;
}

// deepseek-ai/deepseek-llm-7b-chat and DeepSeek-V2-Chat: bos; system + '\n\n'; 'User: ' + content +
// '\n\n'; 'Assistant: ' + content + eos; the generation prompt is 'Assistant:' (no space: the model
// writes it).
std::string render_deepseek2(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  std::string out = t.bos_token;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      out += m.content + "\n\n";
    } else if (m.role == "user") {
      out += "User: " + m.content + "\n\n";
    } else {
      out += "Assistant: " + m.content + t.eos_token;
    }
  }
  if (add_generation_prompt) out += "Assistant:";
  return out;
}

// deepseek-ai/DeepSeek-V3: bos, then every system message (joined by blank lines, wherever they stand),
// then '<｜User｜>' + content and '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' per turn.
std::string render_deepseek3(const ChatTemplate& t, const Messages& messages, bool add_generation_prompt) {
  std::string system;
  bool first_system = true;
  for (const ChatMessage& m : messages) {
    if (m.role != "system") continue;
    system += (first_system ? "" : "\n\n") + m.content;
    first_system = false;
  }
  std::string out = t.bos_token + system;
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      out += "<｜User｜>" + m.content;
    } else if (m.role == "assistant") {
      out += "<｜Assistant｜>" + m.content + "<｜end▁of▁sentence｜>";
    }
  }
  if (add_generation_prompt) out += "<｜Assistant｜>";
  return out;
}

}  // namespace

std::string render_chat_family(const ChatTemplate& chat_template, const std::vector<ChatMessage>& input,
                               bool add_generation_prompt, std::optional<bool> enable_thinking) {
  const ChatTemplateKind kind = chat_template.kind;
  const bool system_only_first = kind == ChatTemplateKind::llama2 || kind == ChatTemplateKind::mistral_v1 ||
                                 kind == ChatTemplateKind::mistral_v3 || kind == ChatTemplateKind::mistral_v3_tekken ||
                                 kind == ChatTemplateKind::gemma;
  check_roles(chat_template, input, system_only_first);

  // The template's own system message stands in when the conversation does not open with one.
  std::vector<ChatMessage> with_default;
  const bool use_default = !chat_template.default_system_message.empty() &&
                           (input.empty() || input.front().role != "system");
  if (use_default) {
    with_default.push_back({"system", chat_template.default_system_message});
    with_default.insert(with_default.end(), input.begin(), input.end());
  }
  const std::vector<ChatMessage>& messages = use_default ? with_default : input;

  switch (kind) {
    case ChatTemplateKind::chatml: return render_chatml(messages, add_generation_prompt);
    case ChatTemplateKind::llama2: return render_llama2(chat_template, messages);
    case ChatTemplateKind::llama3: return render_llama3(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::mistral_v1: return render_mistral_v1(chat_template, messages);
    case ChatTemplateKind::mistral_v3: return render_mistral_v3(chat_template, messages, /*tekken=*/false);
    case ChatTemplateKind::mistral_v3_tekken: return render_mistral_v3(chat_template, messages, /*tekken=*/true);
    case ChatTemplateKind::phi3: return render_phi3(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::zephyr: return render_zephyr(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::gemma: return render_gemma(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::deepseek: return render_deepseek(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::deepseek2: return render_deepseek2(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::deepseek3: return render_deepseek3(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::llama31: return render_llama31(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::qwen3: return render_qwen3(messages, add_generation_prompt, enable_thinking);
    case ChatTemplateKind::qwen35: return render_qwen35(messages, add_generation_prompt, enable_thinking);
    case ChatTemplateKind::deepseek_r1: return render_deepseek_r1(chat_template, messages, add_generation_prompt);
    case ChatTemplateKind::gemma4: return render_gemma4(chat_template, messages, add_generation_prompt, enable_thinking);
  }
  throw Error("unknown chat template kind");
}

}  // namespace nucleus
