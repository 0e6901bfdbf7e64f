// Panel 2's data: one generation, step by step, with what each forward step cost (cost_model.h) and
// how long it took: the prefill is one step over the whole prompt, then one step per decoded token.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/cost_model.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::explain {

struct TraceStep {
  bool prefill = false;
  StepCost cost;         // n_tokens, flops, weight_bytes, kv_bytes
  double seconds = 0.0;  // wall time of the forward step
  int32_t token = -1;    // the token sampled from this step's logits
  std::string text;      // its piece
};

struct GenerationTrace {
  std::vector<TraceStep> steps;
  std::string text;  // the generated continuation
};

// Feeds `prompt` in one step, then decodes up to max_tokens tokens (stopping at end of generation)
// with `chain`, on a fresh KV cache of prompt + max_tokens positions.
GenerationTrace trace_generation(Model& model, const std::vector<int32_t>& prompt, int64_t max_tokens, SamplerChain& chain,
                                 const Tokenizer& tokenizer, int n_threads);

}  // namespace nucleus::explain
