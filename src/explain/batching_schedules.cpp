#include "explain/batching_schedules.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "engine/batch_benchmark.h"
#include "engine/llm_engine.h"

namespace nucleus::explain {

namespace {

// Slots by admission order: a request takes the lowest slot whose previous holder had finished
// when it was admitted (a request leaves at the end of a step, the next joins in a later one).
void assign_slots(std::vector<ScheduledRequest>& requests, int64_t max_batch) {
  std::vector<size_t> order(requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].admitted_seconds < requests[b].admitted_seconds; });
  std::vector<double> free_at(static_cast<size_t>(max_batch), 0.0);
  for (size_t i : order) {
    size_t slot = 0;
    while (slot + 1 < free_at.size() && free_at[slot] > requests[i].admitted_seconds) ++slot;
    requests[i].slot = static_cast<int64_t>(slot);
    free_at[slot] = requests[i].finished_seconds;
  }
}

}  // namespace

ScheduleRun run_schedule(Model& model, const ScheduleWorkload& workload, bool continuous, int n_threads) {
  if (workload.gen_lengths.empty() || workload.max_batch < 1 || workload.prompt_tokens < 1)
    throw Error("batching schedules: the workload needs requests, prompt tokens and a batch of at least 1");
  int64_t longest = 0;
  for (int64_t length : workload.gen_lengths) {
    if (length < 1) throw Error("batching schedules: every request must generate at least 1 token");
    longest = std::max(longest, length);
  }
  EngineConfig config;
  config.n_threads = n_threads;
  config.block_size = 16;
  config.num_blocks = workload.max_batch * ((workload.prompt_tokens + longest + 15) / 16 + 1);
  config.max_num_seqs = workload.max_batch;
  config.max_num_batched_tokens = std::max<int64_t>(512, workload.max_batch * workload.prompt_tokens);
  config.enable_prefix_caching = false;
  LLMEngine engine(model, nullptr, config);
  const int64_t n_vocab = model.hparams().n_vocab;

  ScheduleRun run;
  run.continuous = continuous;
  const size_t n = workload.gen_lengths.size();
  run.requests.resize(n);
  std::vector<double> admitted(n, -1.0);
  auto add = [&](size_t i) {
    RequestOptions options;
    options.sampling.temperature = 0.0f;
    options.stop.max_tokens = static_cast<int32_t>(workload.gen_lengths[i]);
    options.stop.ignore_eos = true;
    engine.add_request(random_prompt(workload.prompt_tokens, n_vocab, static_cast<int64_t>(i)), options, static_cast<int64_t>(i));
    run.requests[i].gen_tokens = workload.gen_lengths[i];
  };
  const auto start = std::chrono::steady_clock::now();
  auto now = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto drain = [&] {
    while (engine.has_unfinished()) {
      ScheduleStep step;
      step.start_seconds = now();
      const std::vector<RequestOutput> outputs = engine.step();
      step.end_seconds = now();
      step.num_running = engine.stats().last_step_requests;
      for (const RequestOutput& out : outputs) {
        const auto i = static_cast<size_t>(out.request_id);
        if (admitted[i] < 0) admitted[i] = step.start_seconds;  // short prompts: prefill and first token in one step
        if (out.finished) run.requests[i].finished_seconds = step.end_seconds;
      }
      run.steps.push_back(step);
    }
  };
  if (continuous) {
    for (size_t i = 0; i < n; ++i) add(i);
    drain();
  } else {
    for (size_t group = 0; group < n; group += static_cast<size_t>(workload.max_batch)) {
      for (size_t i = group; i < std::min(n, group + static_cast<size_t>(workload.max_batch)); ++i) add(i);
      drain();
    }
  }
  run.total_seconds = now();
  double latency = 0, busy = 0;
  for (size_t i = 0; i < n; ++i) {
    run.requests[i].admitted_seconds = admitted[i];
    latency += run.requests[i].finished_seconds;
  }
  for (const ScheduleStep& s : run.steps) busy += (s.end_seconds - s.start_seconds) * static_cast<double>(s.num_running);
  run.mean_latency_seconds = latency / static_cast<double>(n);
  run.mean_occupancy = run.total_seconds > 0 ? busy / (run.total_seconds * static_cast<double>(workload.max_batch)) : 0.0;
  assign_slots(run.requests, workload.max_batch);
  return run;
}

}  // namespace nucleus::explain
