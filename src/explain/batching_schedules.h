// Panel 4's timeline: one mixed-length workload served twice by the engine (LLMEngine), with
// continuous batching (the engine as it is: a request joins the running batch the step after one
// leaves) and with static batching (groups of max_batch requests, the next group admitted only
// once the whole group has finished, so short requests leave their slots idle until the longest
// one ends). Both measured on the same model with the same requests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace nucleus::explain {

struct ScheduleWorkload {
  std::vector<int64_t> gen_lengths;  // tokens each request generates (EOS ignored), in arrival order
  int64_t prompt_tokens = 8;         // random prompt tokens per request
  int64_t max_batch = 4;             // requests running at once (the engine's max_num_seqs)
};

struct ScheduledRequest {
  int64_t gen_tokens = 0;
  int64_t slot = 0;              // which of the max_batch places in the batch it held
  double admitted_seconds = 0.0; // start of the step that ran its prefill
  double finished_seconds = 0.0; // end of the step that produced its last token
};

struct ScheduleStep {
  double start_seconds = 0.0, end_seconds = 0.0;
  int64_t num_running = 0;  // requests in the step
};

struct ScheduleRun {
  bool continuous = true;
  std::vector<ScheduledRequest> requests;  // in arrival order (all arrive at time 0)
  std::vector<ScheduleStep> steps;
  double total_seconds = 0.0;
  double mean_latency_seconds = 0.0;  // mean finish time (every request arrived at 0)
  double mean_occupancy = 0.0;        // time-weighted share of the max_batch slots in use
};

// Throws Error for an empty workload or lengths / batch < 1.
ScheduleRun run_schedule(Model& model, const ScheduleWorkload& workload, bool continuous, int n_threads);

}  // namespace nucleus::explain
