// A StepProfile (kernels/step_profile.h) as `nucleus bench --profile` and `nucleus bench batch
// --profile` report it: per-step milliseconds and shares of the matmuls per weight type (with their
// activation quantization and idle threads), attention and the other operators.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/step_profile.h"

namespace nucleus::cli {

// {steps, ms_per_step, matmul: [{type, ms_per_step, share, calls_per_step, matrices_per_step,
// gb_per_s, quantize_ms_per_step, idle_ms_per_step}], attention_ms_per_step, attention_share,
// other_ms_per_step, other_share, sync_ms_per_step, sync_share}; the shares add up to 1.
nlohmann::json profile_json(const StepProfile& profile);

// The lines under a test's row ("  profile <test>: N steps, X ms per step", then one per part).
void print_profile(const std::string& test, const nlohmann::json& profile);

}  // namespace nucleus::cli
