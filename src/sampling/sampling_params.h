// What a request asks of the token choice. Plain data: parsed by the CLI / server, turned
// into a sampler chain by make_sampler_chain().
#pragma once
#include <cstdint>
#include <optional>

namespace nucleus {

struct SamplingParams {
  float temperature = 1.0f;  // 0 → greedy
  int32_t top_k = 0;         // ≤ 0 → off
  float top_p = 1.0f;        // ≥ 1 → off
  float min_p = 0.0f;        // 0 → off
  std::optional<uint64_t> seed;  // none → a random seed, reported back
};

}  // namespace nucleus
