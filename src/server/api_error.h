// OpenAI-style errors: every failure a client can cause is an ApiError with the HTTP status and the
// body {"error": {"message", "type", "param", "code"}} that OpenAI's API (and SDKs) use.
#pragma once
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace nucleus::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "")
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)), code(std::move(code)) {}
  int status;
  std::string type;   // invalid_request_error, authentication_error, not_found_error, ...
  std::string param;  // the offending request field, or empty
  std::string code;   // machine-readable detail, or empty
};

// 400 invalid_request_error naming the field.
inline ApiError invalid_param(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param);
}

// {"error": {...}}; empty param/code become null, as OpenAI sends them.
nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param,
                          const std::string& code);
inline nlohmann::json error_body(const ApiError& e) { return error_body(e.what(), e.type, e.param, e.code); }
// The error type OpenAI uses for a status without a more specific one.
const char* error_type_for_status(int status);

}  // namespace nucleus::server
