// Engine results → OpenAI response bodies and stream chunks, for /v1/completions ("text_completion")
// and /v1/chat/completions ("chat.completion" / "chat.completion.chunk").
//
// logprobs: completions use the legacy shape {tokens, token_logprobs, top_logprobs: [{piece: lp}],
// text_offset}; chat uses {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
// Token strings are the tokens' pieces (possibly part of a UTF-8 character; "bytes" is exact).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "server/generation.h"
#include "server/openai_protocol.h"

namespace nucleus::server {

// Identity shared by every chunk of one response.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::completions;
  std::string id;       // "cmpl-…" / "chatcmpl-…"
  int64_t created = 0;  // unix seconds
  std::string model;
};

ResponseHeader make_response_header(Endpoint endpoint, const std::string& model);

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// The complete (non-streaming) response. chat_output: how to read a chat choice's text into
// reasoning_content, content and tool_calls (finish_reason "tool_calls" when it holds calls).
nlohmann::json completion_response(const ResponseHeader& header, const Generation& generation, const Tokenizer& tokenizer,
                                   bool with_logprobs, const std::optional<ChatOutputOptions>& chat_output = std::nullopt);

// The parser options of choice `index` (its tool-call ids differ from the other choices').
ChatOutputOptions chat_output_for_choice(const ChatOutputOptions& options, int index);

// A chat stream chunk carrying what a ChatOutputStream released: {"reasoning_content"}, {"content"},
// {"tool_calls": [{index, id, type, function: {name, arguments}}]} (id, type and name on a call's
// first delta only). `finish_reason` is set on the choice's last chunk.
nlohmann::json chat_output_chunk(const ResponseHeader& header, int index, const ChatOutputDelta& delta, const nlohmann::json& logprobs,
                                 const nlohmann::json& finish_reason, bool include_usage);
// OpenAI's finish_reason of a finished choice: "tool_calls" when it called a tool (and was not cut short).
nlohmann::json chat_finish_reason(FinishReason reason, bool called_tools);
// The logprobs field of a delta (null without logprobs).
nlohmann::json delta_logprobs(const ResponseHeader& header, const SequenceDelta& delta, const Tokenizer& tokenizer,
                              bool with_logprobs, size_t text_offset);

// One stream chunk for a choice's delta. `text_offset` is where the delta starts in the choice's text
// (for completions' text_offset). With include_usage every chunk carries "usage": null.
nlohmann::json delta_chunk(const ResponseHeader& header, const SequenceDelta& delta, const Tokenizer& tokenizer,
                           bool with_logprobs, size_t text_offset, bool include_usage);
// Chat streams open each choice with {"role": "assistant", "content": ""}.
nlohmann::json role_chunk(const ResponseHeader& header, int index, bool include_usage);
// The last chunk when include_usage: no choices, the totals.
nlohmann::json usage_chunk(const ResponseHeader& header, int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace nucleus::server
