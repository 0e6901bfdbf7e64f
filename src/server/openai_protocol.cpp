#include "server/openai_protocol.h"

#include "server/structured_output_fields.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "sampling/sampler.h"
#include "server/api_error.h"
#include "server/chat_tools.h"
#include "server/json_fields.h"
#include "server/tool_call_grammar.h"
#include "structured/gbnf_compose.h"

namespace nucleus::server {

using nlohmann::json;

namespace {

void check_token_ids(const std::vector<int32_t>& ids, const Tokenizer& tokenizer, const char* param) {
  for (int32_t id : ids)
    if (id < 0 || id >= tokenizer.n_vocab())
      throw invalid_param(param, std::string("'") + param + "' holds token id " + std::to_string(id) +
                                     ", outside the vocabulary [0, " + std::to_string(tokenizer.n_vocab()) + ")");
}

std::vector<int32_t> token_array(const json& array, const Tokenizer& tokenizer, const char* param) {
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (const json& t : array) {
    if (!t.is_number_integer()) throw invalid_param(param, std::string("'") + param + "' token ids must be integers");
    const int64_t id = t.is_number_unsigned() && t.get<uint64_t>() > INT32_MAX ? -1 : t.get<int64_t>();
    ids.push_back(id < 0 || id > INT32_MAX ? -1 : static_cast<int32_t>(id));
    if (ids.back() < 0)
      throw invalid_param(param, std::string("'") + param + "' holds token id " + t.dump() + ", outside the vocabulary [0, " +
                                     std::to_string(tokenizer.n_vocab()) + ")");
  }
  check_token_ids(ids, tokenizer, param);
  return ids;
}

std::vector<std::vector<int32_t>> parse_prompts(const json& body, const Tokenizer& tokenizer, bool add_special) {
  const json* prompt = field(body, "prompt");
  if (!prompt) throw invalid_param("prompt", "'prompt' is required");
  auto encode = [&](const std::string& text) { return tokenizer.encode(text, add_special, true); };
  std::vector<std::vector<int32_t>> prompts;
  if (prompt->is_string()) {
    prompts.push_back(encode(prompt->get<std::string>()));
  } else if (prompt->is_array()) {
    if (prompt->empty()) throw invalid_param("prompt", "'prompt' must not be an empty list");
    const json& first = prompt->front();
    if (first.is_number()) {
      prompts.push_back(token_array(*prompt, tokenizer, "prompt"));
    } else {
      for (const json& item : *prompt) {
        if (item.is_string()) {
          prompts.push_back(encode(item.get<std::string>()));
        } else if (item.is_array()) {
          prompts.push_back(token_array(item, tokenizer, "prompt"));
        } else {
          throw invalid_param("prompt", "'prompt' must be a string, a list of token ids, or a list of either");
        }
      }
    }
  } else {
    throw invalid_param("prompt", "'prompt' must be a string, a list of token ids, or a list of either");
  }
  for (const auto& p : prompts)
    if (p.empty()) throw invalid_param("prompt", "'prompt' encodes to no tokens");
  return prompts;
}

// The fields both endpoints share. max_tokens is handled by the callers (their defaults differ).
void parse_structured_output(const json& body, const ModelContext& model, GenerationRequest& request,
                             const nlohmann::ordered_json* ordered_body) {
  const StructuredOutputField so = parse_structured_output_fields(body, ordered_body);
  if (!so.spec.active()) return;
  if (!model.constraints) throw invalid_param(so.field, "structured output is not available on this server");
  try {
    const ConstraintCompiler::Compiled compiled = model.constraints->compile(so.spec);
    request.options.grammar = compiled.grammar;
    request.constraint_compile_seconds = compiled.seconds;
    request.constraint_field = so.field;
  } catch (const Error& e) {
    throw invalid_param(so.field, "'" + so.field + "': " + e.what());
  }
}

void parse_common(const json& body, const ModelContext& model, GenerationRequest& request,
                  const nlohmann::ordered_json* ordered_body, bool compile_structured_output = true) {
  if (compile_structured_output) parse_structured_output(body, model, request, ordered_body);
  SamplingParams& s = request.options.sampling;
  StopParams& stop = request.options.stop;
  if (auto v = number_field(body, "temperature", 0.0, 2.0)) s.temperature = static_cast<float>(*v);
  if (auto v = number_field(body, "top_p", 0.0, 1.0)) s.top_p = static_cast<float>(*v);
  if (auto v = integer_field(body, "top_k", -1, INT32_MAX)) s.top_k = *v < 0 ? 0 : static_cast<int32_t>(*v);
  if (auto v = number_field(body, "min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
  if (auto v = number_field(body, "presence_penalty", -2.0, 2.0)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = number_field(body, "frequency_penalty", -2.0, 2.0)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = number_field(body, "repetition_penalty", 0.0, 100.0)) {
    if (*v <= 0.0) throw invalid_param("repetition_penalty", "'repetition_penalty' must be greater than 0");
    s.repetition_penalty = static_cast<float>(*v);
  }
  // OpenAI's penalties count what was generated; ours count the whole sequence (prompt + output).
  s.penalty_last_n = -1;
  if (const json* bias = field(body, "logit_bias")) {
    if (!bias->is_object()) throw invalid_param("logit_bias", "'logit_bias' must be an object of token id → bias");
    for (const auto& [key, value] : bias->items()) {
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != key.size() || id < 0 || id >= model.tokenizer->n_vocab())
        throw invalid_param("logit_bias", "'logit_bias' key '" + key + "' is not a token id in [0, " +
                                              std::to_string(model.tokenizer->n_vocab()) + ")");
      if (!value.is_number() || value.get<double>() < -100.0 || value.get<double>() > 100.0)
        throw invalid_param("logit_bias", "'logit_bias' values must be numbers between -100 and 100");
      s.logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
    }
  }
  if (const json* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) throw invalid_param("seed", "'seed' must be an integer");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  } else {
    s.seed = random_seed();  // one seed per request: sample j uses sample_seed(seed, j)
  }
  if (const json* v = field(body, "stop")) {
    if (v->is_string()) {
      stop.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > 16) throw invalid_param("stop", "'stop' may hold at most 16 strings");
      for (const json& item : *v) {
        if (!item.is_string()) throw invalid_param("stop", "'stop' must be a string or a list of strings");
        stop.stop.push_back(item.get<std::string>());
      }
    } else {
      throw invalid_param("stop", "'stop' must be a string or a list of strings");
    }
  }
  if (auto v = integer_field(body, "n", 1, INT32_MAX)) {
    if (*v > 16) throw invalid_param("n", "'n' must be at most 16, got " + std::to_string(*v));
    request.n = static_cast<int>(*v);
  }
  if (auto v = bool_field(body, "stream")) request.stream = *v;
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw invalid_param("stream_options", "'stream_options' must be an object");
    if (!request.stream) throw invalid_param("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (auto v = bool_field(*so, "include_usage")) request.include_usage = *v;
  }
  if (auto v = string_field(body, "user")) request.user = *v;
  if (auto v = bool_field(body, "ignore_eos")) stop.ignore_eos = *v;
  if (auto v = integer_field(body, "min_tokens", 0, INT32_MAX)) stop.min_tokens = static_cast<int32_t>(*v);
  if (auto v = bool_field(body, "use_beam_search"); v && *v)
    throw invalid_param("use_beam_search", "beam search is not supported by this server");
  if (auto v = integer_field(body, "num_beams", 1, INT32_MAX); v && *v > 1)
    throw invalid_param("num_beams", "beam search is not supported by this server");
  if (auto v = integer_field(body, "best_of", 1, INT32_MAX); v && *v != request.n)
    throw invalid_param("best_of", "'best_of' other than 'n' is not supported");
  try {
    validate_sampling_params(s);
  } catch (const Error& e) {
    throw invalid_param("", e.what());
  }
}

// max_tokens: the budget must fit the context with the longest prompt, as OpenAI and vLLM require.
void set_max_tokens(const json& body, const ModelContext& model, GenerationRequest& request, std::optional<int64_t> default_tokens) {
  size_t longest = 0;
  for (const auto& p : request.prompts) longest = std::max(longest, p.size());
  const int64_t n_prompt = static_cast<int64_t>(longest);
  const char* used_name = "max_tokens";
  std::optional<int64_t> max_tokens = integer_field(body, "max_tokens", 1, INT32_MAX);
  if (auto v = integer_field(body, "max_completion_tokens", 1, INT32_MAX)) {
    max_tokens = v;
    used_name = "max_completion_tokens";
  }
  if (n_prompt >= model.max_model_len)
    throw invalid_param("prompt", "This model's maximum context length is " + std::to_string(model.max_model_len) +
                                      " tokens, but the prompt has " + std::to_string(n_prompt) +
                                      " tokens (at least one token must be left to generate)");
  if (!max_tokens) max_tokens = default_tokens ? std::min(*default_tokens, model.max_model_len - n_prompt) : model.max_model_len - n_prompt;
  if (n_prompt + *max_tokens > model.max_model_len)
    throw invalid_param(used_name, "This model's maximum context length is " + std::to_string(model.max_model_len) +
                                       " tokens. However, you requested " + std::to_string(n_prompt + *max_tokens) + " tokens (" +
                                       std::to_string(n_prompt) + " in the prompt, " + std::to_string(*max_tokens) +
                                       " in the completion). Please reduce the prompt or '" + used_name + "'.");
  request.options.stop.max_tokens = static_cast<int32_t>(*max_tokens);
  if (request.options.stop.min_tokens > request.options.stop.max_tokens)
    throw invalid_param("min_tokens", "'min_tokens' must not exceed '" + std::string(used_name) + "'");
}

void require_object(const json& body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_request_error");
}

}  // namespace

// chat_template_kwargs (vLLM's and llama-server's field for the template's own variables): they become
// variables of the model's Jinja template, as transformers passes them.
nlohmann::ordered_json parse_chat_template_kwargs(const json& body) {
  const json* kwargs = field(body, "chat_template_kwargs");
  if (!kwargs || kwargs->is_null()) return nlohmann::ordered_json::object();
  if (!kwargs->is_object()) throw invalid_param("chat_template_kwargs", "'chat_template_kwargs' must be an object");
  for (const auto& [key, value] : kwargs->items()) {
    if (key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt")
      throw invalid_param("chat_template_kwargs." + key, "chat_template_kwargs cannot set the request's own '" + key + "'");
    if (key == "enable_thinking" && !value.is_boolean())
      throw invalid_param("chat_template_kwargs.enable_thinking", "'chat_template_kwargs.enable_thinking' must be a boolean");
  }
  return nlohmann::ordered_json::parse(kwargs->dump());
}

void check_model_name(const json& body, const ModelContext& model) {
  const json* name = field(body, "model");
  if (!name) return;
  if (!name->is_string()) throw invalid_param("model", "'model' must be a string");
  if (name->get<std::string>() != model.model_name)
    throw ApiError(404, "The model '" + name->get<std::string>() + "' does not exist; this server serves '" + model.model_name + "'",
                   "not_found_error", "model", "model_not_found");
}

GenerationRequest parse_completion_request(const json& body, const ModelContext& model,
                                           const nlohmann::ordered_json* ordered_body) {
  require_object(body);
  check_model_name(body, model);
  GenerationRequest request;
  request.endpoint = Endpoint::completions;
  request.model = model.model_name;
  parse_common(body, model, request, ordered_body);
  const bool add_special = bool_field(body, "add_special_tokens").value_or(true);
  request.prompts = parse_prompts(body, *model.tokenizer, add_special);
  if (auto v = integer_field(body, "logprobs", 0, 20)) request.top_logprobs = static_cast<int32_t>(*v);
  if (auto v = bool_field(body, "echo"); v && *v) throw invalid_param("echo", "'echo' is not supported");
  if (auto v = string_field(body, "suffix"); v && !v->empty()) throw invalid_param("suffix", "'suffix' is not supported");
  set_max_tokens(body, model, request, 16);  // OpenAI's default for completions
  return request;
}

namespace {

struct RenderedChat {
  std::string prompt;
  ToolRequest tools;
  ToolCallFormat format = ToolCallFormat::generic;
  bool add_generation_prompt = true;
  std::string template_source;  // the model's Jinja template ("" for a family chosen by name)
};

// messages + tools → the prompt text, as the model's template renders them.
RenderedChat render_chat_request(const json& body, const nlohmann::ordered_json& ordered, const ModelContext& model) {
  RenderedChat chat;
  nlohmann::ordered_json messages = parse_chat_messages(ordered);
  chat.tools = parse_tool_request(ordered);
  if (!model.chat_template)
    throw ApiError(400, "this model has no usable chat template (" + model.chat_template_error +
                            "); start the server with --chat-template NAME", "invalid_request_error", "messages");
  const ChatTemplate& chat_template = *model.chat_template;
  chat.template_source = chat_template.jinja ? chat_template.source : "";
  chat.format = model.tool_call_format.value_or(detect_tool_call_format(chat.template_source));
  if (!chat.tools.tools.is_null() && !chat_template.jinja)
    throw invalid_param("tools", "'tools' needs the model's own chat template; a template chosen with --chat-template renders none");
  if (chat.tools.calls_possible() && chat.format == ToolCallFormat::generic)
    add_system_text(messages, generic_tool_instructions(chat.tools));
  chat.add_generation_prompt = bool_field(body, "add_generation_prompt").value_or(true);
  try {
    chat.prompt = render_chat_json(chat_template, messages, chat.add_generation_prompt, parse_chat_template_kwargs(body),
                                   chat.tools.tools);
  } catch (const Error& e) {
    throw invalid_param("messages", e.what());
  }
  return chat;
}

bool ends_with_open_think(std::string_view prompt) {
  while (!prompt.empty() && std::isspace(static_cast<unsigned char>(prompt.back()))) prompt.remove_suffix(1);
  return prompt.ends_with("<think>");
}

bool ends_with_closed_think(std::string_view prompt) {
  while (!prompt.empty() && std::isspace(static_cast<unsigned char>(prompt.back()))) prompt.remove_suffix(1);
  return prompt.ends_with("</think>");
}

// The grammar of a chat request: response_format and/or tool calls, after the reasoning block of a
// thinking model. Sets request.options.grammar (and grammar_trigger for tool_choice "auto").
void compile_chat_constraint(const json& body, const nlohmann::ordered_json& ordered_body, const ModelContext& model,
                             const ToolRequest& tools, ToolCallFormat format, const ChatOutputOptions& output,
                             GenerationRequest& request) {
  const StructuredOutputField so = parse_structured_output_fields(body, &ordered_body);
  const bool tool_grammar = tools.calls_possible();
  if (!so.spec.active() && !tool_grammar) return;
  const std::string field = tool_grammar ? (tools.choice == ToolChoice::automatic ? "tools" : "tool_choice") : so.field;
  if (!model.constraints) throw invalid_param(field, "structured output is not available on this server");
  if (so.spec.active() && tool_grammar && tools.choice != ToolChoice::automatic)
    throw invalid_param(so.field, "'" + so.field + "' cannot be combined with tool_choice \"required\" or a named function");
  std::string gbnf, trigger;
  try {
    const std::string response_gbnf = so.spec.active() ? constraint_to_gbnf(so.spec) : "";
    std::string calls_gbnf;
    if (tool_grammar) {
      ToolCallGrammarOptions options;
      options.format = format;
      options.tools = tools.tools;
      if (tools.choice == ToolChoice::named) options.function = tools.function;
      options.parallel = tools.parallel;
      calls_gbnf = tool_call_gbnf(options);
    }
    if (!tool_grammar) {
      gbnf = response_gbnf;
    } else if (tools.choice != ToolChoice::automatic) {
      gbnf = calls_gbnf;
    } else if (so.spec.active()) {  // auto with a response format: the answer is one or the other
      gbnf = "root ::= response-root | calls-root\n" + prefix_gbnf_rules(response_gbnf, "response-") +
             prefix_gbnf_rules(calls_gbnf, "calls-");
    } else {  // auto: free text until the model opens a call, then a valid call
      gbnf = calls_gbnf;
      trigger = tool_call_trigger(format);
    }
    if (output.reasoning && trigger.empty()) gbnf = with_reasoning_prefix(gbnf, output.starts_in_reasoning);
    ConstraintSpec spec;
    spec.kind = ConstraintSpec::Kind::grammar;
    spec.text = gbnf;
    const ConstraintCompiler::Compiled compiled = model.constraints->compile(spec);
    request.options.grammar = compiled.grammar;
    request.options.grammar_trigger = trigger;
    request.constraint_compile_seconds = compiled.seconds;
    request.constraint_field = field;
  } catch (const Error& e) {
    throw invalid_param(field, "'" + field + "': " + e.what());
  }
}

}  // namespace

GenerationRequest parse_chat_request(const json& body, const ModelContext& model, const nlohmann::ordered_json* ordered_body) {
  require_object(body);
  check_model_name(body, model);
  // Tools, messages and schemas keep the client's key order (templates print them with tojson).
  const nlohmann::ordered_json ordered = ordered_body ? *ordered_body : nlohmann::ordered_json::parse(body.dump());
  GenerationRequest request;
  request.endpoint = Endpoint::chat_completions;
  request.model = model.model_name;
  parse_common(body, model, request, &ordered, /*compile_structured_output=*/false);
  const RenderedChat chat = render_chat_request(body, ordered, model);
  const ToolRequest& tools = chat.tools;
  const ToolCallFormat format = chat.format;
  const std::string& prompt = chat.prompt;
  const bool add_generation_prompt = chat.add_generation_prompt;
  const std::string& source = chat.template_source;
  request.prompts.push_back(encode_chat_prompt(*model.tokenizer, prompt));

  ChatOutputOptions output;
  if (tools.calls_possible()) {
    output.tool_format = format;
    output.tools = tools.tools;
  }
  const bool thinking_template = source.find("<think>") != std::string::npos;
  output.reasoning = model.reasoning_split && thinking_template && add_generation_prompt && !ends_with_closed_think(prompt);
  output.starts_in_reasoning = output.reasoning && ends_with_open_think(prompt);
  output.id_seed = request.options.sampling.seed.value_or(0);
  if (output.tool_format || output.reasoning) request.chat_output = output;
  compile_chat_constraint(body, ordered, model, tools, format, output, request);

  const bool logprobs = bool_field(body, "logprobs").value_or(false);
  auto top = integer_field(body, "top_logprobs", 0, 20);
  if (top && !logprobs) throw invalid_param("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
  if (logprobs) request.top_logprobs = static_cast<int32_t>(top.value_or(0));
  set_max_tokens(body, model, request, std::nullopt);  // chat default: the rest of the context
  return request;
}

std::vector<int32_t> parse_tokenize_request(const json& body, const ModelContext& model, const nlohmann::ordered_json* ordered_body) {
  require_object(body);
  check_model_name(body, model);
  if (field(body, "messages"))
    return encode_chat_prompt(*model.tokenizer,
                              render_chat_request(body, ordered_body ? *ordered_body : nlohmann::ordered_json::parse(body.dump()), model).prompt);
  auto prompt = string_field(body, "prompt");
  if (!prompt) throw invalid_param("prompt", "'prompt' (a string) or 'messages' is required");
  const bool add_special = bool_field(body, "add_special_tokens").value_or(true);
  return model.tokenizer->encode(*prompt, add_special, true);
}

std::vector<int32_t> parse_detokenize_request(const json& body, const ModelContext& model) {
  require_object(body);
  check_model_name(body, model);
  const json* tokens = field(body, "tokens");
  if (!tokens) throw invalid_param("tokens", "'tokens' is required");
  if (!tokens->is_array()) throw invalid_param("tokens", "'tokens' must be a list of token ids");
  return token_array(*tokens, *model.tokenizer, "tokens");
}

}  // namespace nucleus::server
