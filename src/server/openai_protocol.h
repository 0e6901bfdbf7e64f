// OpenAI request bodies → what the engine runs. Parsing checks every field's type and domain and
// throws ApiError (400, naming the field; 404 for an unknown model); it never touches the engine.
//
// Chat also takes tools, tool_choice, parallel_tool_calls and tool / tool-call messages
// (chat_tools.h); the output is read by chat_output_parser.h (reasoning_content, tool_calls).
// Accepted (/v1/completions and /v1/chat/completions): model, prompt (string, token ids, or a list of
// either) / messages, max_tokens / max_completion_tokens, temperature, top_p, n, stream,
// stream_options.include_usage, stop, seed, presence_penalty, frequency_penalty, logit_bias,
// logprobs (+ top_logprobs for chat), user; vLLM's extras top_k, min_p, repetition_penalty,
// min_tokens, ignore_eos; structured output in every dialect (structured_output_fields.h:
// response_format, structured_outputs, guided_*, grammar, json_schema), compiled here so a bad
// schema is a 400 before anything runs. Unknown fields are ignored and null means "not given", as
// OpenAI does.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/chat_output_parser.h"
#include "server/tool_call_format.h"
#include "structured/constraint.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::server {

enum class Endpoint { completions, chat_completions };

// What the parser needs to know about the served model.
struct ModelContext {
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;  // null: the model has none (chat requests get 400)
  std::string chat_template_error;              // why, for that 400
  std::string model_name;
  int64_t max_model_len = 0;
  ConstraintCompiler* constraints = nullptr;    // structured output (null: such requests get 400)
  std::optional<ToolCallFormat> tool_call_format;  // serve --tool-call-parser; nullopt: read from the template
  bool reasoning_split = true;                  // <think>…</think> → reasoning_content (serve --reasoning-format)
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;
  std::vector<std::vector<int32_t>> prompts;  // one per prompt; chat has exactly one
  RequestOptions options;                     // shared by every sequence; the seed is the request's
  int n = 1;                                  // samples per prompt; sample j draws with sample_seed(seed, j)
  bool stream = false;
  bool include_usage = false;                 // stream_options.include_usage
  int32_t top_logprobs = -1;                  // < 0: no logprobs; 0: the chosen token's only
  std::string user;
  std::string constraint_field;               // the structured-output field given ("" when none)
  double constraint_compile_seconds = -1;     // its compile time (0: from the cache; < 0: none)
  // Chat: how to read the output (reasoning block, tool calls); nullopt: all of it is content.
  std::optional<ChatOutputOptions> chat_output;

  int64_t num_sequences() const { return static_cast<int64_t>(prompts.size()) * n; }
};

// ordered_body: the same body parsed keeping key order (JSON Schemas keep their property order).
GenerationRequest parse_completion_request(const nlohmann::json& body, const ModelContext& model,
                                           const nlohmann::ordered_json* ordered_body = nullptr);
GenerationRequest parse_chat_request(const nlohmann::json& body, const ModelContext& model,
                                     const nlohmann::ordered_json* ordered_body = nullptr);

// The "model" field of any request: absent/null → fine; otherwise it must name the served model (404).
void check_model_name(const nlohmann::json& body, const ModelContext& model);

// /tokenize: {"prompt": str, "add_special_tokens"?: bool} or {"messages": [...], "add_generation_prompt"?}.
// The template variables of a chat request's chat_template_kwargs, as an object (empty when absent):
// the model's Jinja template reads any of them. An ApiError 400 names a key that would replace one of
// the request's own variables (messages, tools, documents, add_generation_prompt) and a non-boolean
// enable_thinking; a template chosen by name (--chat-template) takes only enable_thinking.
nlohmann::ordered_json parse_chat_template_kwargs(const nlohmann::json& body);

// /tokenize with messages takes tools too, rendered as chat requests are (ordered_body: key order kept).
std::vector<int32_t> parse_tokenize_request(const nlohmann::json& body, const ModelContext& model,
                                            const nlohmann::ordered_json* ordered_body = nullptr);
// /detokenize: {"tokens": [ids]} (each checked against the vocabulary).
std::vector<int32_t> parse_detokenize_request(const nlohmann::json& body, const ModelContext& model);

}  // namespace nucleus::server
