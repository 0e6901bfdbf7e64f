// What every route handler shares: JSON responses, OpenAI error bodies, body parsing, and the
// guard that turns any exception into an error response (ApiError → its status; Error → 400; any
// other exception → 500).
#pragma once
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <string>

#include "core/error.h"
#include "server/api_error.h"
#include "server/sse.h"

namespace nucleus::server {

inline void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

inline void send_error(httplib::Response& res, const ApiError& e, int retry_after_seconds) {
  send_json(res, e.status, error_body(e));
  if (e.status == 503 || e.status == 429) res.set_header("Retry-After", std::to_string(retry_after_seconds));
}

inline nlohmann::json parse_body(const httplib::Request& req) {
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw ApiError(400, "the request body is not valid JSON (or not valid UTF-8)", "invalid_request_error");
  return body;
}

// Runs a handler, turning every exception into an OpenAI error response.
template <class F>
void guarded(httplib::Response& res, int retry_after_seconds, F&& handler) {
  try {
    handler();
  } catch (const ApiError& e) {
    send_error(res, e, retry_after_seconds);
  } catch (const Error& e) {
    send_error(res, ApiError(400, e.what(), "invalid_request_error"), retry_after_seconds);
  } catch (const std::exception& e) {
    send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"), retry_after_seconds);
  }
}

}  // namespace nucleus::server
