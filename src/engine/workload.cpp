#include "engine/workload.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>
#include <thread>
#include <unordered_map>

#include "core/error.h"
#include "core/rng.h"

namespace nucleus {

namespace {

// Streams of uniform_at(seed, position, stream): each random choice has its own, so changing one
// range (say the generation lengths) does not change the prompts.
enum Stream : uint64_t {
  kArrival = 1,
  kPromptLen = 2,
  kGenLen = 3,
  kPrefixGroup = 4,
  kPrefixPick = 5,
  kPromptToken = 6,
  kPrefixToken = 7,
  kSamplingSeed = 8,
};

constexpr uint64_t kTokenStride = 1ull << 32;  // position of token k of item i: i · stride + k

// Uniform integer in [lo, hi].
int64_t uniform_int(uint64_t seed, uint64_t position, uint64_t stream, int64_t lo, int64_t hi) {
  const double u = uniform_at(seed, position, stream);
  const int64_t v = lo + static_cast<int64_t>(u * static_cast<double>(hi - lo + 1));
  return std::min(v, hi);
}

void check_range(const char* name, int64_t lo, int64_t hi) {
  if (lo < 1) throw Error(std::string("workload: ") + name + " minimum " + std::to_string(lo) + " must be ≥ 1");
  if (lo > hi)
    throw Error(std::string("workload: ") + name + " minimum " + std::to_string(lo) + " is larger than its maximum " +
                std::to_string(hi));
}

}  // namespace

void validate_workload_spec(const WorkloadSpec& s) {
  if (s.num_requests < 1) throw Error("workload: the number of requests must be ≥ 1, got " + std::to_string(s.num_requests));
  if (std::isnan(s.rate) || s.rate < 0) throw Error("workload: the request rate must be ≥ 0 (0 or inf: all at once)");
  check_range("prompt length", s.prompt_len_min, s.prompt_len_max);
  check_range("generation length", s.gen_len_min, s.gen_len_max);
  if (s.shared_prefix_len < 0) throw Error("workload: the shared prefix length must be ≥ 0");
  if (s.prefix_groups < 1) throw Error("workload: the number of prefix groups must be ≥ 1");
  if (!(s.prefix_fraction >= 0.0 && s.prefix_fraction <= 1.0))
    throw Error("workload: the prefix fraction must be in [0, 1]");
  if (!(s.temperature >= 0.0f)) throw Error("workload: the temperature must be ≥ 0");
  if (s.token_ids.empty()) throw Error("workload: no token ids to draw prompts from");
}

std::vector<WorkloadRequest> make_workload(const WorkloadSpec& s) {
  validate_workload_spec(s);
  const auto n = static_cast<size_t>(s.num_requests);
  const auto n_ids = static_cast<int64_t>(s.token_ids.size());
  auto token = [&](uint64_t position, uint64_t stream) {
    return s.token_ids[static_cast<size_t>(uniform_int(s.seed, position, stream, 0, n_ids - 1))];
  };

  // The shared prefixes, and which requests start with one: exactly round(F · N) of them, chosen by
  // a seeded shuffle, so the fraction is exact rather than expected.
  std::vector<std::vector<int32_t>> prefixes;
  std::vector<int64_t> group(n, -1);
  if (s.shared_prefix_len > 0) {
    for (int64_t g = 0; g < s.prefix_groups; ++g) {
      std::vector<int32_t> p;
      for (int64_t k = 0; k < s.shared_prefix_len; ++k)
        p.push_back(token(static_cast<uint64_t>(g) * kTokenStride + static_cast<uint64_t>(k), kPrefixToken));
      prefixes.push_back(std::move(p));
    }
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    for (size_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<size_t>(uniform_int(s.seed, i, kPrefixPick, 0, static_cast<int64_t>(i)));
      std::swap(order[i], order[j]);
    }
    const auto n_prefixed = static_cast<size_t>(std::llround(s.prefix_fraction * static_cast<double>(n)));
    for (size_t k = 0; k < n_prefixed; ++k)
      group[order[k]] = uniform_int(s.seed, order[k], kPrefixGroup, 0, s.prefix_groups - 1);
  }

  const bool at_once = s.rate == 0.0 || std::isinf(s.rate);
  std::vector<WorkloadRequest> workload(n);
  double t = 0.0;
  for (size_t i = 0; i < n; ++i) {
    WorkloadRequest& r = workload[i];
    if (!at_once && i > 0) t += -std::log(1.0 - uniform_at(s.seed, i, kArrival)) / s.rate;  // exponential gaps
    r.arrival_s = t;
    r.prefix_group = group[i];
    if (r.prefix_group >= 0) r.prompt = prefixes[static_cast<size_t>(r.prefix_group)];
    const int64_t len = uniform_int(s.seed, i, kPromptLen, s.prompt_len_min, s.prompt_len_max);
    for (int64_t k = 0; k < len; ++k) r.prompt.push_back(token(i * kTokenStride + static_cast<uint64_t>(k), kPromptToken));
    r.gen_len = uniform_int(s.seed, i, kGenLen, s.gen_len_min, s.gen_len_max);
    r.temperature = s.temperature;
    r.sampling_seed = splitmix64(splitmix64(s.seed) ^ (static_cast<uint64_t>(i) * kTokenStride + kSamplingSeed));
  }
  return workload;
}

std::vector<int32_t> ordinary_token_ids(const Tokenizer* tokenizer, int32_t n_vocab) {
  std::vector<int32_t> ids;
  const uint32_t special = kAttrControl | kAttrUserDefined | kAttrUnknown | kAttrUnused;
  for (int32_t id = 0; id < n_vocab; ++id) {
    if (tokenizer && id < tokenizer->n_vocab() && tokenizer->vocab().has_attribute(id, special)) continue;
    if (tokenizer && tokenizer->is_end_of_generation(id)) continue;
    ids.push_back(id);
  }
  return ids;
}

void warm_up_engine(LLMEngine& engine, const std::vector<int32_t>& token_ids, int64_t n_prompt) {
  if (token_ids.empty() || n_prompt < 1) return;
  std::vector<int32_t> prompt;
  for (int64_t k = 0; k < n_prompt; ++k)
    prompt.push_back(token_ids[static_cast<size_t>(splitmix64(0x5eed + static_cast<uint64_t>(k)) % token_ids.size())]);
  RequestOptions o;
  o.sampling.temperature = 0.0f;
  o.stop.max_tokens = 2;
  o.stop.ignore_eos = true;
  const int64_t id = engine.add_request(std::move(prompt), o);
  bool done = false;
  while (!done && engine.has_unfinished())
    for (const RequestOutput& out : engine.step()) done = done || (out.request_id == id && out.finished);
}

WorkloadReport replay_workload(LLMEngine& engine, const std::vector<WorkloadRequest>& workload) {
  using Clock = std::chrono::steady_clock;
  std::vector<RequestOptions> options(workload.size());
  for (size_t i = 0; i < workload.size(); ++i) {
    const WorkloadRequest& w = workload[i];
    if (i > 0 && w.arrival_s < workload[i - 1].arrival_s)
      throw Error("workload: request " + std::to_string(i) + " arrives before request " + std::to_string(i - 1));
    RequestOptions& o = options[i];
    o.sampling.temperature = w.temperature;
    o.sampling.seed = w.sampling_seed;
    o.stop.max_tokens = static_cast<int32_t>(w.gen_len);
    o.stop.ignore_eos = true;
    try {
      engine.validate_request(w.prompt, o);
    } catch (const Error& e) {
      throw Error("workload: request " + std::to_string(i) + ": " + e.what());
    }
  }

  WorkloadReport report;
  report.num_requests = static_cast<int64_t>(workload.size());
  report.requests.resize(workload.size());
  const EngineStats before = engine.stats();
  std::unordered_map<int64_t, size_t> index;  // engine id → workload position
  const Clock::time_point start = Clock::now();
  auto seconds_since_start = [&](Clock::time_point t) { return std::chrono::duration<double>(t - start).count(); };
  auto arrival = [&](size_t i) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(workload[i].arrival_s));
  };

  size_t next = 0;
  double last_token_s = 0;
  while (next < workload.size() || engine.has_unfinished()) {
    const Clock::time_point now = Clock::now();
    for (; next < workload.size() && arrival(next) <= now; ++next) {
      const WorkloadRequest& w = workload[next];
      WorkloadRequestResult& r = report.requests[next];
      r.arrival_s = w.arrival_s;
      r.prompt_tokens = static_cast<int64_t>(w.prompt.size());
      index[engine.add_request(w.prompt, options[next])] = next;
    }
    if (!engine.has_unfinished()) {
      if (next < workload.size()) std::this_thread::sleep_until(arrival(next));
      continue;
    }
    for (const RequestOutput& out : engine.step()) {
      auto it = index.find(out.request_id);
      if (it == index.end()) continue;  // not ours
      WorkloadRequestResult& r = report.requests[it->second];
      const double t = seconds_since_start(out.produced_at);
      if (!out.new_tokens.empty()) {
        if (r.first_token_s < 0) r.first_token_s = t;
        r.last_token_s = t;
        last_token_s = std::max(last_token_s, t);
      }
      r.output_tokens = out.num_output_tokens;
      if (out.finished) {
        r.finish_reason = out.finish_reason;
        r.failed = out.aborted || !out.error.empty();
      }
    }
    const EngineStats s = engine.stats();
    report.peak_kv_usage = std::max(report.peak_kv_usage, s.kv_usage());
    report.peak_running = std::max(report.peak_running, s.num_running);
  }
  report.duration_s = last_token_s;

  std::vector<double> ttft, tpot, e2e;
  for (const WorkloadRequestResult& r : report.requests) {
    report.prompt_tokens += r.prompt_tokens;
    report.output_tokens += r.output_tokens;
    if (r.failed || r.first_token_s < 0) {
      ++report.failed;
      continue;
    }
    ++report.completed;
    ttft.push_back(1000.0 * (r.first_token_s - r.arrival_s));
    e2e.push_back(1000.0 * (r.last_token_s - r.arrival_s));
    if (r.output_tokens > 1) tpot.push_back(1000.0 * (r.last_token_s - r.first_token_s) / static_cast<double>(r.output_tokens - 1));
  }
  report.ttft_ms = summarize(std::move(ttft));
  report.tpot_ms = summarize(std::move(tpot));
  report.e2e_ms = summarize(std::move(e2e));
  if (report.duration_s > 0) {
    report.request_throughput = static_cast<double>(report.completed) / report.duration_s;
    report.output_throughput = static_cast<double>(report.output_tokens) / report.duration_s;
    report.total_throughput = static_cast<double>(report.prompt_tokens + report.output_tokens) / report.duration_s;
  }

  const EngineStats after = engine.stats();
  report.steps = after.steps - before.steps;
  report.preemptions = after.preemptions - before.preemptions;
  report.prefix_queries = after.block_pool.prefix_queries - before.block_pool.prefix_queries;
  report.prefix_hits = after.block_pool.prefix_hits - before.block_pool.prefix_hits;
  report.prefix_hit_rate =
      report.prefix_queries > 0 ? static_cast<double>(report.prefix_hits) / static_cast<double>(report.prefix_queries) : 0.0;
  report.prefix_cached_tokens = after.prefix_cached_tokens - before.prefix_cached_tokens;
  return report;
}

}  // namespace nucleus
