// Server-sent events as OpenAI streams them: each chunk is one "data: <json>\n\n" event, and the
// stream ends with "data: [DONE]\n\n".
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace nucleus::server {

// Token pieces in logprobs may be parts of a UTF-8 character: they are replaced (U+FFFD) rather than
// failing the dump; the text itself is always complete UTF-8.
inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
inline std::string sse_event(const nlohmann::json& chunk) { return "data: " + dump_json(chunk) + "\n\n"; }
inline std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace nucleus::server
