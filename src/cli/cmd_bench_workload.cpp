// nucleus bench workload: replays a synthetic workload (Poisson arrivals, prompt and generation
// lengths uniform in ranges, optional shared prefixes) through the engine in this process, without
// HTTP, and reports throughput, TTFT/TPOT/end-to-end percentiles, prefix-cache hits, preemptions and
// peak KV usage. The workload and its replay live in engine/workload.h; this file parses and prints.
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "cli/commands.h"
#include "core/error.h"
#include "engine/llm_engine.h"
#include "engine/workload.h"

namespace nucleus::cli {

namespace {

using nlohmann::json;

struct WorkloadBenchOptions {
  ModelSource source;
  int64_t requests = 64;
  std::string rate = "inf";
  std::string prompt_len = "32:128", gen_len = "16:64";
  int64_t shared_prefix_len = 0, prefix_groups = 1;
  double prefix_fraction = 0.5;
  uint64_t seed = 0;
  float temperature = 0.0f;
  int n_threads = 0;
  int64_t max_num_batched_tokens = 512, max_num_seqs = 64;
  int64_t kv_cache_mib = 256, num_blocks = 0;
  bool no_prefix_caching = false;
  bool no_warmup = false;
  bool json = false;
};

// "MIN:MAX" or "N" (= N:N), both ≥ 1 and MIN ≤ MAX.
std::pair<int64_t, int64_t> parse_range(const std::string& text, const char* flag) {
  const size_t colon = text.find(':');
  const std::string lo_text = text.substr(0, colon), hi_text = colon == std::string::npos ? lo_text : text.substr(colon + 1);
  auto parse = [&](const std::string& item) -> int64_t {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 1) throw std::invalid_argument(item);
      return v;
    } catch (const std::exception&) {
      throw Error(std::string(flag) + ": '" + text + "' is not MIN:MAX with positive integers");
    }
  };
  const int64_t lo = parse(lo_text), hi = parse(hi_text);
  if (lo > hi) throw Error(std::string(flag) + ": '" + text + "' has MIN larger than MAX");
  return {lo, hi};
}

double parse_rate(const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  try {
    size_t used = 0;
    const double r = std::stod(text, &used);
    if (used != text.size() || !(r >= 0)) throw std::invalid_argument(text);
    return r;
  } catch (const std::exception&) {
    throw Error("--rate: '" + text + "' is not a non-negative number or 'inf'");
  }
}

json summary_json(const LatencySummary& s) { return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}}; }

int run_bench_workload(const WorkloadBenchOptions& o) {
  // Flags first, so a bad one fails before the model loads.
  WorkloadSpec spec;
  spec.num_requests = o.requests;
  spec.rate = parse_rate(o.rate);
  std::tie(spec.prompt_len_min, spec.prompt_len_max) = parse_range(o.prompt_len, "--prompt-len");
  std::tie(spec.gen_len_min, spec.gen_len_max) = parse_range(o.gen_len, "--gen-len");
  spec.shared_prefix_len = o.shared_prefix_len;
  spec.prefix_groups = o.prefix_groups;
  spec.prefix_fraction = o.prefix_fraction;
  spec.seed = o.seed;
  spec.temperature = o.temperature;

  LoadedModel loaded = load_model(o.source);
  Model& model = *loaded.model;
  spec.token_ids = ordinary_token_ids(loaded.tokenizer.get(), static_cast<int32_t>(model.hparams().n_vocab));
  const std::vector<WorkloadRequest> workload = make_workload(spec);

  EngineConfig config;
  config.n_threads = o.n_threads > 0 ? o.n_threads : default_threads();
  config.max_num_batched_tokens = o.max_num_batched_tokens;
  config.max_num_seqs = o.max_num_seqs;
  config.num_blocks = o.num_blocks;
  config.kv_cache_bytes = o.kv_cache_mib << 20;
  config.enable_prefix_caching = !o.no_prefix_caching;
  config.check_memory = o.source.check_memory;
  LLMEngine engine(model, loaded.tokenizer.get(), config);
  if (!o.no_warmup) warm_up_engine(engine, spec.token_ids);
  const WorkloadReport r = replay_workload(engine, workload);
  const int64_t num_blocks = engine.block_pool().num_blocks();

  const json rate = std::isfinite(spec.rate) && spec.rate > 0 ? json(spec.rate) : json("inf");
  if (o.json) {
    const json report = {
        {"model", o.source.model_path},
        {"num_requests", r.num_requests},
        {"completed", r.completed},
        {"failed", r.failed},
        {"request_rate", rate},
        {"duration_s", r.duration_s},
        {"prompt_tokens", r.prompt_tokens},
        {"output_tokens", r.output_tokens},
        {"request_throughput", r.request_throughput},
        {"output_throughput", r.output_throughput},
        {"total_token_throughput", r.total_throughput},
        {"ttft_ms", summary_json(r.ttft_ms)},
        {"tpot_ms", summary_json(r.tpot_ms)},
        {"e2e_latency_ms", summary_json(r.e2e_ms)},
        {"prefix_hit_rate", r.prefix_hit_rate},
        {"prefix_queries", r.prefix_queries},
        {"prefix_hits", r.prefix_hits},
        {"prefix_cached_tokens", r.prefix_cached_tokens},
        {"preemptions", r.preemptions},
        {"peak_kv_usage", r.peak_kv_usage},
        {"peak_running", r.peak_running},
        {"steps", r.steps},
        {"workload",
         {{"seed", spec.seed},
          {"prompt_len", {spec.prompt_len_min, spec.prompt_len_max}},
          {"gen_len", {spec.gen_len_min, spec.gen_len_max}},
          {"shared_prefix_len", spec.shared_prefix_len},
          {"prefix_groups", spec.prefix_groups},
          {"prefix_fraction", spec.prefix_fraction},
          {"temperature", spec.temperature}}},
        {"engine",
         {{"num_blocks", num_blocks},
          {"block_size", config.block_size},
          {"max_num_batched_tokens", config.max_num_batched_tokens},
          {"max_num_seqs", config.max_num_seqs},
          {"enable_prefix_caching", config.enable_prefix_caching},
          {"n_threads", config.n_threads},
          {"warmup", !o.no_warmup}}}};
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    std::printf("bench workload: %s, %lld requests at %s req/s, prompt %lld:%lld (+%lld shared ×%lld groups for %.0f%%), gen %lld:%lld, seed %llu\n",
                o.source.model_path.c_str(), static_cast<long long>(r.num_requests), rate.is_string() ? "inf" : o.rate.c_str(),
                static_cast<long long>(spec.prompt_len_min), static_cast<long long>(spec.prompt_len_max),
                static_cast<long long>(spec.shared_prefix_len), static_cast<long long>(spec.prefix_groups),
                spec.shared_prefix_len > 0 ? 100.0 * spec.prefix_fraction : 0.0, static_cast<long long>(spec.gen_len_min),
                static_cast<long long>(spec.gen_len_max), static_cast<unsigned long long>(spec.seed));
    std::printf("engine: %lld KV blocks of %lld, budget %lld tokens/step, %lld seqs, prefix caching %s, %d threads\n\n",
                static_cast<long long>(num_blocks), static_cast<long long>(config.block_size),
                static_cast<long long>(config.max_num_batched_tokens), static_cast<long long>(config.max_num_seqs),
                config.enable_prefix_caching ? "on" : "off", config.n_threads);
    std::printf("%-28s %lld / %lld (%lld failed)\n", "completed", static_cast<long long>(r.completed),
                static_cast<long long>(r.num_requests), static_cast<long long>(r.failed));
    std::printf("%-28s %.3f\n", "duration (s)", r.duration_s);
    std::printf("%-28s %lld / %lld\n", "prompt / output tokens", static_cast<long long>(r.prompt_tokens),
                static_cast<long long>(r.output_tokens));
    std::printf("%-28s %.2f\n", "requests/s", r.request_throughput);
    std::printf("%-28s %.1f\n", "output tok/s", r.output_throughput);
    std::printf("%-28s %.1f\n", "total tok/s", r.total_throughput);
    std::printf("\n%-10s %10s %10s %10s %10s\n", "ms", "mean", "p50", "p90", "p99");
    auto row = [](const char* name, const LatencySummary& s) {
      std::printf("%-10s %10.2f %10.2f %10.2f %10.2f\n", name, s.mean, s.p50, s.p90, s.p99);
    };
    row("TTFT", r.ttft_ms);
    row("TPOT", r.tpot_ms);
    row("E2E", r.e2e_ms);
    std::printf("\n%-28s %.1f%% (%lld of %lld block lookups)\n", "prefix hit rate", 100.0 * r.prefix_hit_rate,
                static_cast<long long>(r.prefix_hits), static_cast<long long>(r.prefix_queries));
    std::printf("%-28s %lld\n", "prefix-cached prompt tokens", static_cast<long long>(r.prefix_cached_tokens));
    std::printf("%-28s %lld\n", "preemptions", static_cast<long long>(r.preemptions));
    std::printf("%-28s %.1f%%\n", "peak KV usage", 100.0 * r.peak_kv_usage);
    std::printf("%-28s %lld\n", "peak running requests", static_cast<long long>(r.peak_running));
    std::printf("%-28s %lld\n", "engine steps", static_cast<long long>(r.steps));
  }
  return r.failed == 0 ? 0 : 1;
}

}  // namespace

void add_bench_workload_command(CLI::App& bench, std::function<void(Runner)> set_runner) {
  auto o = std::make_shared<WorkloadBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("workload", "replay a synthetic workload (Poisson arrivals, shared prefixes) through the engine");
  add_model_flags(*cmd, o->source);
  cmd->add_option("--requests", o->requests, "number of requests")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--rate", o->rate, "arrivals per second (Poisson); 0 or 'inf': all at once");
  cmd->add_option("--prompt-len", o->prompt_len, "random prompt tokens per request, MIN:MAX (uniform), after any shared prefix");
  cmd->add_option("--gen-len", o->gen_len, "generated tokens per request, MIN:MAX (uniform; EOS ignored)");
  cmd->add_option("--shared-prefix-len", o->shared_prefix_len, "tokens of each shared prefix (0: none)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--prefix-groups", o->prefix_groups, "distinct shared prefixes")->check(CLI::PositiveNumber);
  cmd->add_option("--prefix-fraction", o->prefix_fraction, "fraction of requests starting with a shared prefix")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", o->seed, "seed of the workload (arrivals, lengths, tokens, sampling)");
  cmd->add_option("--temperature", o->temperature, "0: greedy; otherwise seeded sampling")->check(CLI::NonNegativeNumber);
  cmd->add_option("-t,--threads", o->n_threads, "threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-num-batched-tokens", o->max_num_batched_tokens, "token budget of one engine step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-num-seqs", o->max_num_seqs, "sequences running at once")->check(CLI::Range(1, 4096));
  auto* mem = cmd->add_option("--kv-cache-mem", o->kv_cache_mib, "KV cache pool size in MiB")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--num-blocks", o->num_blocks, "KV cache pool size in blocks of 16 tokens (instead of --kv-cache-mem)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->excludes(mem);
  cmd->add_flag("--no-prefix-caching", o->no_prefix_caching, "disable prefix caching");
  cmd->add_flag("--no-warmup", o->no_warmup, "skip the short warm-up request before the replay");
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->callback([o, set_runner] { set_runner([o] { return run_bench_workload(*o); }); });
}

}  // namespace nucleus::cli
