#include "server/json_fields.h"

#include <cmath>

#include "server/api_error.h"

namespace nucleus::server {

using nlohmann::json;

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number_field(const json& body, const char* name, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw invalid_param(name, std::string("'") + name + "' must be a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    throw invalid_param(name, std::string("'") + name + "' must be between " + json(lo).dump() + " and " + json(hi).dump() +
                                  ", got " + v->dump());
  return x;
}

std::optional<int64_t> integer_field(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw invalid_param(name, std::string("'") + name + "' must be an integer, got " + v->dump());
  const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
  const int64_t x = too_big ? hi : v->get<int64_t>();
  if (too_big || x < lo || x > hi)
    throw invalid_param(name, std::string("'") + name + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                  ", got " + v->dump());
  return x;
}

std::optional<bool> bool_field(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw invalid_param(name, std::string("'") + name + "' must be a boolean, got " + v->dump());
  return v->get<bool>();
}

std::optional<std::string> string_field(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw invalid_param(name, std::string("'") + name + "' must be a string");
  return v->get<std::string>();
}

}  // namespace nucleus::server
