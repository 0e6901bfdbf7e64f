// Recognizing a chat template's family from its Jinja source by distinctive substrings.
//
// The tests are ordered from the most specific markers to the least, and every family that merely
// looks like a supported one (same special tokens, different layout) is turned away explicitly, so a
// template is either rendered exactly or refused — never rendered as a near miss.
#include <string>
#include <string_view>

#include "tokenizer/chat_template.h"

namespace nucleus {

namespace {

// The source with the spelling differences that do not change what it renders taken out, so a marker
// can be written once: whitespace and "\n" escapes removed, double quotes made single, Jinja's
// whitespace-control dashes dropped, message.content written message['content'].
std::string normalize_jinja(std::string_view jinja) {
  std::string out;
  out.reserve(jinja.size());
  for (size_t i = 0; i < jinja.size(); ++i) {
    const char c = jinja[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '\\' && i + 1 < jinja.size() && jinja[i + 1] == 'n') {
      ++i;
      continue;
    }
    out += c == '"' ? '\'' : c;
  }
  auto replace_all = [&out](std::string_view from, std::string_view to) {
    for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size()))
      out.replace(at, from.size(), to);
  };
  replace_all("{{-", "{{");
  replace_all("-}}", "}}");
  replace_all("{%-", "{%");
  replace_all("-%}", "%}");
  replace_all("message.content", "message['content']");
  return out;
}

}  // namespace

std::optional<ChatTemplateKind> detect_chat_template(std::string_view jinja) {
  // Some converters store just the family's name.
  const size_t first = jinja.find_first_not_of(" \t\r\n");
  const size_t last = jinja.find_last_not_of(" \t\r\n");
  if (first != std::string_view::npos) {
    if (auto named = chat_template_from_name(jinja.substr(first, last - first + 1))) return named;
  }

  const std::string normalized = normalize_jinja(jinja);
  auto has = [jinja](std::string_view marker) { return jinja.find(marker) != std::string_view::npos; };
  auto normalized_has = [&normalized](std::string_view marker) { return normalized.find(marker) != std::string::npos; };

  if (has("<|im_start|>")) {
    if (has("<|im_sep|>")) return std::nullopt;          // Phi-4: role<|im_sep|>content, no line breaks
    if (has("<end_of_utterance>")) return std::nullopt;  // SmolVLM: <|im_start|> is only its BOS
    if (!has("<|im_end|>")) return std::nullopt;
    if (has("think")) {
      // Reasoning templates each treat <think> their own way; only Qwen3's and Qwen3.5's are rendered.
      // (QwQ, SmolLM3, Nemotron, LFM2.5, StepFun, MiniCPM5, Bielik: refused, never rendered as plain ChatML.)
      if (has("ns.last_query_index") && has("enable_thinking is defined and enable_thinking is false")) {
        if (has("'<think>\\n' }}") && has("System message must be at the beginning.")) return ChatTemplateKind::qwen35;
        if (has("loop.last or (not loop.last and reasoning_content)")) return ChatTemplateKind::qwen3;
      }
      return std::nullopt;
    }
    // Tool-use templates that write their own system turn (Hermes 2 Pro "tool_use") are not plain ChatML.
    if (has("tools") && has("<tool_call>") && !has("messages[0]['role'] == 'system'") && !has("messages[0].role == 'system'"))
      return std::nullopt;
    return ChatTemplateKind::chatml;
  }
  if (has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return std::nullopt;  // Mistral v7 (Large 2411, Small 3): a system turn of its own
    if (has("<<SYS>>")) return ChatTemplateKind::llama2;
    // The three Mistral layouts differ only in the spaces around [INST] and [/INST].
    if (has("\"[INST]\"") || has("'[INST]'")) return ChatTemplateKind::mistral_v3_tekken;
    if (has("\"[/INST]\"") || has("'[/INST]'")) return ChatTemplateKind::mistral_v3;
    return ChatTemplateKind::mistral_v1;  // ' [/INST]': v1, and the older Mistral/Mixtral templates of that tokenizer
  }
  if (has("<|start_header_id|>") && has("<|end_header_id|>") && has("<|eot_id|>")) {
    // Llama 3.1+: a system turn with the knowledge cutoff and today's date, always.
    if (has("Cutting Knowledge Date: December 2023")) {
      if (has("builtin_tools") || has("strftime_now") || has("26 Jul 2024")) return ChatTemplateKind::llama31;
      return std::nullopt;
    }
    // Function-calling variants (Functionary, FireFunction) write their own system turns.
    if (has("functions") || has("tools")) return std::nullopt;
    return ChatTemplateKind::llama3;
  }
  if (has("<|turn>") && has("<turn|>")) return ChatTemplateKind::gemma4;
  if (has("<start_of_turn>") && has("<end_of_turn>")) return ChatTemplateKind::gemma;
  if (has("<|assistant|>") && has("<|end|>")) {
    if (has("<|tool|>")) return std::nullopt;  // Phi-4-mini: no line break after the role
    if (has("BEGIN FINAL RESPONSE")) return std::nullopt;  // ServiceNow Apriel: reasoning steps, then a final-response marker
    return ChatTemplateKind::phi3;
  }
  if (has("<|user|>") && has("<|assistant|>")) {
    // Zephyr ends every message with EOS; Falcon 3, GLM-Edge and ChatGLM use the same role tokens
    // with other separators.
    if (normalized_has("'<|user|>'+message['content']+eos_token") ||
        normalized_has("'<|user|>'+message['content']+'<|endoftext|>'"))
      return ChatTemplateKind::zephyr;
    return std::nullopt;
  }
  if (has("### Instruction:") && has("<|EOT|>")) return ChatTemplateKind::deepseek;
  if (has("<｜User｜>") && has("<｜Assistant｜>") && has("<｜end▁of▁sentence｜>")) {
    if (!has("think")) return ChatTemplateKind::deepseek3;
    // R1 distills; the later DeepSeek templates (V3.1 and on: thinking switches, their own tool
    // formats) are refused.
    if (has("'<｜Assistant｜><think>\\n'") && has("{%- set ns.system_prompt = message['content'] -%}") &&
        !has("is_tool_outputs"))  // llama.cpp's own R1 template with tools differs
      return ChatTemplateKind::deepseek_r1;
    return std::nullopt;
  }
  if (normalized_has("'User:'+message['content']") && normalized_has("'Assistant:'+message['content']+eos_token"))
    return ChatTemplateKind::deepseek2;
  return std::nullopt;
}

bool gemma_accepts_system(std::string_view jinja) { return jinja.find("System role not supported") == std::string_view::npos; }

std::string chatml_default_system_message(std::string_view jinja) {
  // Look for a string literal that is a whole system turn with fixed text:
  //   '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n'
  // Literals that only open the turn, or splice in the user's system message, contain quotes or Jinja
  // syntax between the markers and are skipped.
  constexpr std::string_view kOpen = "<|im_start|>system";
  constexpr std::string_view kClose = "<|im_end|>";
  for (size_t at = jinja.find(kOpen); at != std::string_view::npos; at = jinja.find(kOpen, at + 1)) {
    size_t text_begin = at + kOpen.size();
    if (jinja.substr(text_begin, 2) == "\\n") {
      text_begin += 2;
    } else if (jinja.substr(text_begin, 1) == "\n") {
      text_begin += 1;
    } else {
      continue;
    }
    const size_t text_end = jinja.find(kClose, text_begin);
    if (text_end == std::string_view::npos) break;
    const std::string_view text = jinja.substr(text_begin, text_end - text_begin);
    if (!text.empty() && text.find_first_of("'\"{}\\+") == std::string_view::npos) return std::string(text);
  }
  return "";
}

}  // namespace nucleus
