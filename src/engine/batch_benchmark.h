// The batching benchmark: B requests of random prompt tokens, all submitted at once to a fresh
// LLMEngine, each generating a fixed number of tokens (greedy, EOS ignored). Measures throughput
// and per-request latency per batch size, and finds the knee of the throughput curve.
// Used by `nucleus bench batch` and by the explainer's batching panel.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/step_profile.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace nucleus {

struct BatchBenchmarkConfig {
  int64_t n_prompt = 128;                  // prompt tokens per request
  int64_t n_gen = 128;                     // generated tokens per request
  int64_t max_num_batched_tokens = 2048;   // the engine's token budget per step (raised to ≥ batch)
  int n_threads = 1;
  KvType kv_type = KvType::f32;            // element type of the engine's KV cache
  StepProfile* decode_profile = nullptr;   // when set, the decode phase's steps are profiled into it
};

struct BatchPoint {
  int64_t batch = 0;
  double gen_tok_s = 0.0;    // generated tokens per second over the decode phase (llama-batched-bench S_TG)
  double total_tok_s = 0.0;  // (prompt + generated) tokens over the whole run
  double ttft_ms = 0.0;      // mean time to first token
  double tpot_ms = 0.0;      // mean time per output token after the first
  double seconds = 0.0;      // the whole run
  // The decode phase: from the moment every request has its first token to the end.
  int64_t decode_steps = 0;     // engine steps in it
  double decode_seconds = 0.0;
  // The tokens gen_tok_s counts (batch · (n_gen − 1), the i-th at n_prompt + i − 1 cached
  // positions), costed by model/cost_model.h: their FLOPs, and the bytes the phase reads (every
  // weight once per step, plus those tokens' KV reads and writes). Over decode_seconds they give the
  // achieved GFLOP/s and GB/s that `nucleus bench batch` sets against the machine's peaks.
  double decode_flops = 0.0;
  double decode_bytes = 0.0;
};

// A benchmark prompt: n_prompt token ids drawn from [0, n_vocab) by a seeded hash, request `index`
// getting its own (reproducible) stream. Shared with the explainer's batching schedules.
std::vector<int32_t> random_prompt(int64_t n_prompt, int64_t n_vocab, int64_t index);

// Throws Error unless batch ≥ 1, n_prompt ≥ 1 and n_gen ≥ 1. With config.decode_profile the model's
// profile is attached for the decode phase's steps only (and detached before returning).
BatchPoint measure_batch(Model& model, const BatchBenchmarkConfig& config, int64_t batch);

// The smallest batch reaching 90% of the best generation throughput (0 when there are no points).
int64_t find_knee(const std::vector<BatchPoint>& points);

// The largest batch up to which generation throughput rises almost linearly with the batch: every
// point up to it (points in increasing batch order) keeps a per-sequence rate gen_tok_s / batch of at
// least `efficiency` times the first point's. That is the knee in the batching argument's sense
// (each weight load yields ~B tokens until here); find_knee's saturation point comes later on an
// engine that saturates slowly and earlier on one that reaches a higher ceiling sooner.
// 0 when there are no points.
int64_t find_linear_limit(const std::vector<BatchPoint>& points, double efficiency = 0.8);

}  // namespace nucleus
