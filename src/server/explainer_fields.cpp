#include "server/explainer_fields.h"

#include "explain/explainer.h"
#include "sampling/sampler.h"
#include "server/api_error.h"
#include "server/json_fields.h"

namespace nucleus::server {

using nlohmann::json;

std::string explainer_context_field(const json& body, const explain::Explainer& explainer) {
  if (!body.is_object()) throw invalid_param("", "the request body must be a JSON object");
  return string_field(body, "context").value_or(explainer.default_context());
}

SamplingParams explainer_sampling_fields(const json& body, int64_t n_vocab) {
  SamplingParams s;
  if (auto v = number_field(body, "temperature", 0.0, 100.0)) s.temperature = static_cast<float>(*v);
  if (auto v = integer_field(body, "top_k", 0, n_vocab)) s.top_k = static_cast<int32_t>(*v);
  if (auto v = number_field(body, "top_p", 0.0, 1.0)) s.top_p = static_cast<float>(*v);
  if (auto v = number_field(body, "min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
  if (auto v = number_field(body, "typical_p", 0.0, 1.0)) s.typical_p = static_cast<float>(*v);
  if (auto v = integer_field(body, "seed", 0, INT64_MAX)) s.seed = static_cast<uint64_t>(*v);
  validate_sampling_params(s);
  return s;
}

int64_t explainer_max_tokens_field(const json& body, int64_t default_value) {
  return integer_field(body, "max_tokens", 1, kExplainerMaxGeneratedTokens).value_or(default_value);
}

std::vector<int64_t> integer_list_field(const json& body, const char* name, size_t max_count, int64_t lo, int64_t hi,
                                        std::vector<int64_t> default_value) {
  if (!body.is_object()) throw invalid_param("", "the request body must be a JSON object");
  const json* list = field(body, name);
  if (!list) return default_value;
  const std::string quoted = std::string("'") + name + "'";
  if (!list->is_array() || list->empty() || list->size() > max_count)
    throw invalid_param(name, quoted + " must be a list of 1 to " + std::to_string(max_count) + " integers");
  std::vector<int64_t> values;
  for (const json& v : *list) {
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw invalid_param(name, quoted + " entries must be integers between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                    ", got " + v.dump());
    values.push_back(v.get<int64_t>());
  }
  return values;
}

}  // namespace nucleus::server
