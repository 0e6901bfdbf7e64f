// Request fields the explainer's routes share (explainer_routes.cpp, explainer_speed_routes.cpp):
// each validates as json_fields does (400 naming the field).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sampling/sampling_params.h"

namespace nucleus::explain {
class Explainer;
}

namespace nucleus::server {

inline constexpr int64_t kExplainerMaxGeneratedTokens = 256;

// `context`, or the explainer's default; throws when the body is not an object.
std::string explainer_context_field(const nlohmann::json& body, const explain::Explainer& explainer);
// The sampling knobs: OpenAI's names, a wider temperature range (T ≫ 1 is the point), `seed`.
SamplingParams explainer_sampling_fields(const nlohmann::json& body, int64_t n_vocab);
int64_t explainer_max_tokens_field(const nlohmann::json& body, int64_t default_value);
// A list of 1 … max_count integers in [lo, hi], or `default_value` when absent.
std::vector<int64_t> integer_list_field(const nlohmann::json& body, const char* name, size_t max_count, int64_t lo, int64_t hi,
                                        std::vector<int64_t> default_value);

}  // namespace nucleus::server
