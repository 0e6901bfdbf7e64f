// Synthetic serving workloads replayed through an LLMEngine in-process (no HTTP): `nucleus bench
// workload` and its tests. A workload is a list of requests with arrival times (Poisson at a given
// rate, or all at once), prompts of random ordinary token ids with lengths uniform in a range,
// optionally starting with one of a few shared prefixes (to exercise prefix caching), and a fixed
// number of tokens to generate each (EOS ignored). Everything is a function of the seed.
//
// replay_workload adds each request to the engine once its arrival time has passed on a steady
// clock, steps the engine meanwhile (sleeping when it is idle and the next arrival is in the
// future), and measures what a client would see: TTFT from the arrival, TPOT, end-to-end latency,
// throughput, plus the engine's prefix-cache hits, preemptions and peak KV usage.
#pragma once
#include <cstdint>
#include <vector>

#include "core/latency_summary.h"
#include "engine/llm_engine.h"

namespace nucleus {

struct WorkloadSpec {
  int64_t num_requests = 64;
  double rate = 0.0;                 // requests per second (Poisson arrivals); 0 or infinity: all at time 0
  int64_t prompt_len_min = 32, prompt_len_max = 128;  // random tokens after the shared prefix (if any)
  int64_t gen_len_min = 16, gen_len_max = 64;         // tokens to generate, EOS ignored
  int64_t shared_prefix_len = 0;     // L: tokens of each shared prefix (0: none)
  int64_t prefix_groups = 1;         // G: distinct shared prefixes
  double prefix_fraction = 0.5;      // share of the requests (rounded) that start with a shared prefix
  uint64_t seed = 0;
  float temperature = 0.0f;          // 0: greedy; otherwise sampling with a per-request seed from `seed`
  std::vector<int32_t> token_ids;    // the ids prompts draw from (see ordinary_token_ids)
};

struct WorkloadRequest {
  double arrival_s = 0.0;            // seconds after the replay starts
  std::vector<int32_t> prompt;       // shared prefix (when prefix_group ≥ 0) + random tokens
  int64_t gen_len = 0;
  int64_t prefix_group = -1;         // which shared prefix it starts with; -1: none
  float temperature = 0.0f;
  uint64_t sampling_seed = 0;
};

// Throws Error (one line, naming the field) when the spec is inconsistent: a range with MIN > MAX or
// MIN < 1, a negative or NaN rate, prefix_fraction outside [0, 1], no token ids, ...
void validate_workload_spec(const WorkloadSpec& spec);

// The workload of `spec`: the same spec (and seed) always gives the same requests, in arrival order.
std::vector<WorkloadRequest> make_workload(const WorkloadSpec& spec);

// Ids that are plain text pieces: every id of [0, n_vocab) except control, user-defined, unknown and
// unused tokens (all ids when `tokenizer` is null).
std::vector<int32_t> ordinary_token_ids(const Tokenizer* tokenizer, int32_t n_vocab);

struct WorkloadRequestResult {
  int64_t prompt_tokens = 0, output_tokens = 0;
  double arrival_s = 0, first_token_s = -1, last_token_s = -1;  // seconds after the replay started
  FinishReason finish_reason = FinishReason::none;
  bool failed = false;               // refused or aborted by the engine
};

struct WorkloadReport {
  int64_t num_requests = 0, completed = 0, failed = 0;
  int64_t prompt_tokens = 0, output_tokens = 0;
  double duration_s = 0;             // replay start → last token
  double request_throughput = 0;     // completed requests per second
  double output_throughput = 0;      // generated tokens per second
  double total_throughput = 0;       // (prompt + generated) tokens per second
  LatencySummary ttft_ms, tpot_ms, e2e_ms;  // over completed requests (TPOT: those with ≥ 2 tokens)
  // Engine counters over the replay (differences, so a reused engine reports this run only).
  int64_t steps = 0, preemptions = 0;
  int64_t prefix_queries = 0, prefix_hits = 0;  // block-pool lookups of full prompt blocks
  double prefix_hit_rate = 0;        // prefix_hits / prefix_queries
  int64_t prefix_cached_tokens = 0;  // prompt tokens served from the prefix cache
  double peak_kv_usage = 0;          // highest fraction of KV blocks in use after any step
  int64_t peak_running = 0;          // most requests running at once
  std::vector<WorkloadRequestResult> requests;  // in workload order
};

// Runs one short greedy request (`n_prompt` ids from `token_ids`, 2 generated) to completion, so the
// replay's first steps do not pay for first-touch page faults of the KV pool and thread start-up.
void warm_up_engine(LLMEngine& engine, const std::vector<int32_t>& token_ids, int64_t n_prompt = 32);

// Replays the workload (in arrival order) through `engine`, which should have no requests of its
// own. Every request is checked with validate_request before the clock starts, so a request that
// cannot fit the engine is an Error naming it, not a failure half-way.
WorkloadReport replay_workload(LLMEngine& engine, const std::vector<WorkloadRequest>& workload);

}  // namespace nucleus
