// What a request asks of the token choice. Plain data: parsed by the CLI / server, turned into a
// SamplerChain (sampler.h). Stop rules, beam search and logprobs have their own params structs
// (stop_conditions.h, beam_search.h, logprobs.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nucleus {

// The stages a chain can run, by the names `--samplers` accepts.
enum class SamplerStageKind { logit_bias, penalties, temperature, top_k, top_p, min_p, typical_p };

// The default order: edits of single logits first (bias, penalties), then temperature, then the
// truncations — the OpenAI / vLLM / Hugging Face semantics, where top-k, top-p, min-p and typical-p
// see the tempered distribution. (llama.cpp applies temperature last: "penalties,top_k,typical_p,
// top_p,min_p,temperature" reproduces that.)
std::vector<SamplerStageKind> default_sampler_order();
// Parses a comma-separated list such as "penalties,top_k,top_p,min_p,temperature". Names are the
// enumerators above ('-' is accepted for '_', "typical" for typical_p, "temp" for temperature).
// A stage left out of the list never runs. Throws Error for an unknown or repeated name.
std::vector<SamplerStageKind> parse_sampler_order(const std::string& text);
std::string format_sampler_order(const std::vector<SamplerStageKind>& order);
const char* sampler_stage_name(SamplerStageKind kind);

struct SamplingParams {
  float temperature = 1.0f;  // 0 → greedy: argmax after logit bias and penalties; truncations ignored
  int32_t top_k = 0;         // ≤ 0 → off
  float top_p = 1.0f;        // ≥ 1 → off
  float min_p = 0.0f;        // ≤ 0 → off
  float typical_p = 1.0f;    // ≥ 1 → off (locally typical sampling, Meister et al. 2022)

  // Penalties look at the last `penalty_last_n` tokens of the sequence — prompt and output together,
  // as llama.cpp does (-1: the whole sequence, 0: penalties off). All three share that window.
  float repetition_penalty = 1.0f;  // llama.cpp / HF (CTRL): a seen token's logit l → l / r if l > 0, else l · r
  float frequency_penalty = 0.0f;   // OpenAI: l −= count · frequency_penalty
  float presence_penalty = 0.0f;    // OpenAI: l −= (count > 0) · presence_penalty
  int32_t penalty_last_n = 64;

  // OpenAI logit_bias: added to the token's logit before anything else; −inf bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias;

  // End-of-generation tokens are banned (logit −inf) while fewer than min_tokens tokens have been
  // generated. The ids come from the tokenizer (filled in by the caller), not from the user.
  int32_t min_tokens = 0;
  std::vector<int32_t> end_of_generation_ids;

  std::vector<SamplerStageKind> order = default_sampler_order();
  std::optional<uint64_t> seed;  // none → a random seed, reported back so the run can be replayed
};

}  // namespace nucleus
