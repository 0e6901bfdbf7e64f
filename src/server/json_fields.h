// Reading typed, range-checked fields of a JSON request body. Every failure is an ApiError 400 that
// names the field and says what was expected ("'top_p' must be between 0 and 1, got 1.5").
// Absent and null fields both mean "not given".
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace nucleus::server {

// A present, non-null field, or nullptr.
const nlohmann::json* field(const nlohmann::json& body, const char* name);
// A finite number in [lo, hi].
std::optional<double> number_field(const nlohmann::json& body, const char* name, double lo, double hi);
// An integer in [lo, hi].
std::optional<int64_t> integer_field(const nlohmann::json& body, const char* name, int64_t lo, int64_t hi);
std::optional<bool> bool_field(const nlohmann::json& body, const char* name);
std::optional<std::string> string_field(const nlohmann::json& body, const char* name);

}  // namespace nucleus::server
