// Engine results → OpenAI response bodies and stream chunks, for /v1/completions ("text_completion")
// and /v1/chat/completions ("chat.completion" / "chat.completion.chunk").
//
// logprobs: completions use the legacy shape {tokens, token_logprobs, top_logprobs: [{piece: lp}],
// text_offset}; chat uses {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
// Token strings are the tokens' pieces (possibly part of a UTF-8 character; "bytes" is exact).
#pragma once
#include <nlohmann/json.hpp>

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

// The complete (non-streaming) response.
nlohmann::json completion_response(const ResponseHeader& header, const Generation& generation, const Tokenizer& tokenizer,
                                   bool with_logprobs);

// One stream chunk for a choice's delta. `text_offset` is where the delta starts in the choice's text
// (for completions' text_offset). With include_usage every chunk carries "usage": null.
nlohmann::json delta_chunk(const ResponseHeader& header, const SequenceDelta& delta, const Tokenizer& tokenizer,
                           bool with_logprobs, size_t text_offset, bool include_usage);
// Chat streams open each choice with {"role": "assistant", "content": ""}.
nlohmann::json role_chunk(const ResponseHeader& header, int index, bool include_usage);
// The last chunk when include_usage: no choices, the totals.
nlohmann::json usage_chunk(const ResponseHeader& header, int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace nucleus::server
