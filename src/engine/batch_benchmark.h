// The batching benchmark: B requests of random prompt tokens, all submitted at once to a fresh
// LLMEngine, each generating a fixed number of tokens (greedy, EOS ignored). Measures throughput
// and per-request latency per batch size, and finds the knee of the throughput curve.
// Used by `nucleus bench batch` and by the explainer's batching panel.
#pragma once
#include <cstdint>
#include <vector>

#include "model/kv_cache.h"
#include "model/model.h"

namespace nucleus {

struct BatchBenchmarkConfig {
  int64_t n_prompt = 128;                  // prompt tokens per request
  int64_t n_gen = 128;                     // generated tokens per request
  int64_t max_num_batched_tokens = 2048;   // the engine's token budget per step (raised to ≥ batch)
  int n_threads = 1;
  KvType kv_type = KvType::f32;            // element type of the engine's KV cache
};

struct BatchPoint {
  int64_t batch = 0;
  double gen_tok_s = 0.0;    // generated tokens per second over the decode phase (llama-batched-bench S_TG)
  double total_tok_s = 0.0;  // (prompt + generated) tokens over the whole run
  double ttft_ms = 0.0;      // mean time to first token
  double tpot_ms = 0.0;      // mean time per output token after the first
  double seconds = 0.0;      // the whole run
};

// A benchmark prompt: n_prompt token ids drawn from [0, n_vocab) by a seeded hash, request `index`
// getting its own (reproducible) stream. Shared with the explainer's batching schedules.
std::vector<int32_t> random_prompt(int64_t n_prompt, int64_t n_vocab, int64_t index);

// Throws Error unless batch ≥ 1, n_prompt ≥ 1 and n_gen ≥ 1.
BatchPoint measure_batch(Model& model, const BatchBenchmarkConfig& config, int64_t batch);

// The smallest batch reaching 90% of the best generation throughput (0 when there are no points).
int64_t find_knee(const std::vector<BatchPoint>& points);

}  // namespace nucleus
