#include "engine/batch_benchmark.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/error.h"
#include "core/rng.h"
#include "engine/llm_engine.h"
#include "model/cost_model.h"

namespace nucleus {

std::vector<int32_t> random_prompt(int64_t n_prompt, int64_t n_vocab, int64_t index) {
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < n_prompt; ++i)
    prompt.push_back(static_cast<int32_t>(splitmix64(static_cast<uint64_t>(index * 100003 + i)) % static_cast<uint64_t>(n_vocab)));
  return prompt;
}

BatchPoint measure_batch(Model& model, const BatchBenchmarkConfig& o, int64_t batch) {
  if (batch < 1 || o.n_prompt < 1 || o.n_gen < 1) throw Error("batch benchmark: batch, prompt and gen must be ≥ 1");
  EngineConfig config;
  config.n_threads = o.n_threads;
  config.kv_type = o.kv_type;
  config.block_size = 16;
  config.num_blocks = batch * ((o.n_prompt + o.n_gen + 15) / 16 + 1);
  config.max_num_seqs = batch;
  config.max_num_batched_tokens = std::max<int64_t>(o.max_num_batched_tokens, batch);
  config.enable_prefix_caching = false;  // random prompts share nothing; measure the plain engine
  LLMEngine engine(model, nullptr, config);
  const int64_t n_vocab = model.hparams().n_vocab;
  std::vector<double> first(static_cast<size_t>(batch), -1.0), last(static_cast<size_t>(batch), 0.0);
  std::vector<int64_t> ids;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int32_t> prompt = random_prompt(o.n_prompt, n_vocab, b);
    RequestOptions ro;
    ro.sampling.temperature = 0.0f;
    ro.stop.max_tokens = static_cast<int32_t>(o.n_gen);
    ro.stop.ignore_eos = true;
    ids.push_back(engine.add_request(std::move(prompt), ro));
  }
  const auto start = std::chrono::steady_clock::now();
  auto now = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int64_t n_first = 0, decode_steps = 0;  // requests with their first token; steps once all have it
  std::optional<ScopedProfile> decode_profile;  // attached once the decode phase begins
  while (engine.has_unfinished()) {
    if (n_first == batch) ++decode_steps;
    for (const RequestOutput& out : engine.step()) {
      const size_t i = static_cast<size_t>(std::find(ids.begin(), ids.end(), out.request_id) - ids.begin());
      const double t = now();
      if (first[i] < 0) first[i] = t, ++n_first;
      last[i] = t;
    }
    if (n_first == batch && o.decode_profile && !decode_profile) decode_profile.emplace(model, o.decode_profile);
  }
  BatchPoint p;
  p.batch = batch;
  p.seconds = now();
  p.decode_steps = decode_steps;
  const double decode_start = *std::max_element(first.begin(), first.end());  // all have their first token
  double ttft = 0, tpot = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    ttft += first[i];
    if (o.n_gen > 1) tpot += (last[i] - first[i]) / static_cast<double>(o.n_gen - 1);
  }
  p.ttft_ms = 1000.0 * ttft / static_cast<double>(batch);
  p.tpot_ms = 1000.0 * tpot / static_cast<double>(batch);
  // Generation throughput over the decode phase: the tokens generated after every request had its
  // first one, over that time.
  const double decode_seconds = p.seconds - decode_start;
  p.decode_seconds = decode_seconds;
  p.gen_tok_s = decode_seconds > 0 ? static_cast<double>(batch * (o.n_gen - 1)) / decode_seconds : 0.0;
  for (int64_t i = 1; i < o.n_gen; ++i) {
    const StepCost c = estimate_sequence_step_cost(model, o.n_prompt + i - 1, 1);
    p.decode_flops += static_cast<double>(batch) * c.flops;
    p.decode_bytes += static_cast<double>(batch) * c.kv_bytes;
  }
  p.decode_bytes += static_cast<double>(decode_steps) * estimate_sequence_step_cost(model, 0, 1).weight_bytes;
  p.total_tok_s = static_cast<double>(batch * (o.n_prompt + o.n_gen)) / p.seconds;
  return p;
}

int64_t find_knee(const std::vector<BatchPoint>& points) {
  double best = 0;
  for (const BatchPoint& p : points) best = std::max(best, p.gen_tok_s);
  for (const BatchPoint& p : points)
    if (p.gen_tok_s >= 0.9 * best) return p.batch;
  return points.empty() ? 0 : points.back().batch;
}

int64_t find_linear_limit(const std::vector<BatchPoint>& points, double efficiency) {
  if (points.empty()) return 0;
  const double first_rate = points.front().gen_tok_s / static_cast<double>(points.front().batch);
  int64_t limit = points.front().batch;
  for (const BatchPoint& p : points) {
    if (p.gen_tok_s / static_cast<double>(p.batch) < efficiency * first_rate) break;
    limit = p.batch;
  }
  return limit;
}

}  // namespace nucleus
