#include "server/openai_responses.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

namespace nucleus::server {

using nlohmann::json;

namespace {

json finish_reason_json(bool finished, FinishReason reason) {
  if (!finished) return nullptr;
  // An aborted or refused sequence has no reason of its own; "stop" is what clients expect at an end.
  return reason == FinishReason::length ? "length" : "stop";
}

json logprob_value(float lp) { return std::isfinite(lp) ? json(lp) : json(-9999.0); }  // OpenAI's floor for −inf

json bytes_of(const std::string& s) {
  json bytes = json::array();
  for (unsigned char c : s) bytes.push_back(c);
  return bytes;
}

// Chat: {content: [{token, logprob, bytes, top_logprobs}]}
json chat_logprobs(const std::vector<TokenLogprobs>& logprobs, const Tokenizer& tokenizer) {
  json content = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    const std::string piece = tokenizer.token_to_piece(lp.chosen.token);
    json top = json::array();
    for (const TokenLogprob& t : lp.top) {
      const std::string p = tokenizer.token_to_piece(t.token);
      top.push_back({{"token", p}, {"logprob", logprob_value(t.logprob)}, {"bytes", bytes_of(p)}});
    }
    content.push_back({{"token", piece}, {"logprob", logprob_value(lp.chosen.logprob)}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// Completions: {tokens, token_logprobs, top_logprobs, text_offset}
json completion_logprobs(const std::vector<TokenLogprobs>& logprobs, const Tokenizer& tokenizer, size_t text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    const std::string piece = tokenizer.token_to_piece(lp.chosen.token);
    tokens.push_back(piece);
    token_logprobs.push_back(logprob_value(lp.chosen.logprob));
    json top = json::object();
    for (const TokenLogprob& t : lp.top) top[tokenizer.token_to_piece(t.token)] = logprob_value(t.logprob);
    top_logprobs.push_back(top);
    offsets.push_back(text_offset);
    text_offset += piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

json logprobs_json(Endpoint endpoint, const std::vector<TokenLogprobs>& logprobs, const Tokenizer& tokenizer, size_t text_offset) {
  return endpoint == Endpoint::chat_completions ? chat_logprobs(logprobs, tokenizer)
                                                : completion_logprobs(logprobs, tokenizer, text_offset);
}

json header_json(const ResponseHeader& header, bool chunk) {
  const char* object = header.endpoint == Endpoint::completions ? "text_completion"
                       : chunk                                   ? "chat.completion.chunk"
                                                                 : "chat.completion";
  return {{"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

std::string random_id() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%016llx%04llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(counter++ & 0xffff));
  return buffer;
}

}  // namespace

ResponseHeader make_response_header(Endpoint endpoint, const std::string& model) {
  ResponseHeader header;
  header.endpoint = endpoint;
  header.id = std::string(endpoint == Endpoint::completions ? "cmpl-" : "chatcmpl-") + random_id();
  header.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  header.model = model;
  return header;
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}, {"total_tokens", prompt_tokens + completion_tokens}};
}

ChatOutputOptions chat_output_for_choice(const ChatOutputOptions& options, int index) {
  ChatOutputOptions o = options;
  o.id_seed = options.id_seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1));
  return o;
}

json chat_finish_reason(FinishReason reason, bool called_tools) {
  if (called_tools && reason != FinishReason::length) return "tool_calls";
  return finish_reason_json(true, reason);
}

json completion_response(const ResponseHeader& header, const Generation& generation, const Tokenizer& tokenizer, bool with_logprobs,
                         const std::optional<ChatOutputOptions>& chat_output) {
  json response = header_json(header, false);
  json choices = json::array();
  for (const SequenceState& s : generation.sequences()) {
    json choice = {{"index", s.index}};
    bool called_tools = false;
    if (header.endpoint == Endpoint::chat_completions && chat_output) {
      const ChatOutput parsed = parse_chat_output(s.text, chat_output_for_choice(*chat_output, s.index));
      json message = {{"role", "assistant"}};
      message["content"] = parsed.content.empty() && !parsed.tool_calls.empty() ? json(nullptr) : json(parsed.content);
      if (chat_output->reasoning) message["reasoning_content"] = parsed.reasoning_content;
      if (!parsed.tool_calls.empty()) {
        json calls = json::array();
        for (const ParsedToolCall& c : parsed.tool_calls)
          calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
        message["tool_calls"] = std::move(calls);
        called_tools = true;
      }
      choice["message"] = std::move(message);
    } else if (header.endpoint == Endpoint::chat_completions) {
      choice["message"] = {{"role", "assistant"}, {"content", s.text}};
    } else {
      choice["text"] = s.text;
    }
    choice["logprobs"] = with_logprobs ? logprobs_json(header.endpoint, s.logprobs, tokenizer, 0) : json(nullptr);
    choice["finish_reason"] = called_tools ? chat_finish_reason(s.finish_reason, true) : finish_reason_json(true, s.finish_reason);
    choices.push_back(std::move(choice));
  }
  response["choices"] = std::move(choices);
  response["usage"] = usage_json(generation.prompt_tokens(), generation.completion_tokens());
  return response;
}

json delta_chunk(const ResponseHeader& header, const SequenceDelta& delta, const Tokenizer& tokenizer, bool with_logprobs,
                 size_t text_offset, bool include_usage) {
  json chunk = header_json(header, true);
  json choice = {{"index", delta.index}};
  if (header.endpoint == Endpoint::chat_completions) {
    choice["delta"] = delta.text.empty() && delta.finished ? json::object() : json{{"content", delta.text}};
  } else {
    choice["text"] = delta.text;
  }
  choice["logprobs"] = with_logprobs ? logprobs_json(header.endpoint, delta.logprobs, tokenizer, text_offset) : json(nullptr);
  choice["finish_reason"] = finish_reason_json(delta.finished, delta.finish_reason);
  chunk["choices"] = json::array({choice});
  if (include_usage) chunk["usage"] = nullptr;
  return chunk;
}

json delta_logprobs(const ResponseHeader& header, const SequenceDelta& delta, const Tokenizer& tokenizer, bool with_logprobs,
                    size_t text_offset) {
  return with_logprobs ? logprobs_json(header.endpoint, delta.logprobs, tokenizer, text_offset) : json(nullptr);
}

json chat_output_chunk(const ResponseHeader& header, int index, const ChatOutputDelta& delta, const json& logprobs,
                       const json& finish_reason, bool include_usage) {
  json chunk = header_json(header, true);
  json d = json::object();
  if (!delta.reasoning_content.empty()) d["reasoning_content"] = delta.reasoning_content;
  if (!delta.content.empty()) d["content"] = delta.content;
  if (!delta.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCallDelta& c : delta.tool_calls) {
      json call = {{"index", c.index}};
      json function = json::object();
      if (!c.id.empty()) {
        call["id"] = c.id;
        call["type"] = "function";
        function["name"] = c.name;
      }
      function["arguments"] = c.arguments;
      call["function"] = std::move(function);
      calls.push_back(std::move(call));
    }
    d["tool_calls"] = std::move(calls);
  }
  chunk["choices"] = json::array({{{"index", index}, {"delta", std::move(d)}, {"logprobs", logprobs}, {"finish_reason", finish_reason}}});
  if (include_usage) chunk["usage"] = nullptr;
  return chunk;
}

json role_chunk(const ResponseHeader& header, int index, bool include_usage) {
  json chunk = header_json(header, true);
  chunk["choices"] = json::array(
      {{{"index", index}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
  if (include_usage) chunk["usage"] = nullptr;
  return chunk;
}

json usage_chunk(const ResponseHeader& header, int64_t prompt_tokens, int64_t completion_tokens) {
  json chunk = header_json(header, true);
  chunk["choices"] = json::array();
  chunk["usage"] = usage_json(prompt_tokens, completion_tokens);
  return chunk;
}

}  // namespace nucleus::server
