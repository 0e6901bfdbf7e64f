// nucleus bench: llama-bench-style prompt processing (ppN) and generation (tgN) throughput,
// with achieved bandwidth and arithmetic against this machine's measured peaks.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/bench_profile.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/rng.h"
#include "model/sequence_runner.h"
#include "kernels/machine_peak.h"
#include "model/cost_model.h"

namespace nucleus::cli {

namespace {

struct BenchOptions {
  ModelSource source;
  std::string prompts = "512", gens = "128";
  int64_t depth = 0;  // tokens already in the KV cache before each test (llama-bench's -d)
  int n_threads = 0;
  int repetitions = 5;
  bool json = false;
  std::string trace_path;
  bool profile = false;
};

std::vector<int64_t> parse_list(const std::string& text, const char* flag) {
  std::vector<int64_t> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      values.push_back(v);
    } catch (const std::exception&) {
      throw Error(std::string(flag) + ": '" + item + "' is not a non-negative integer");
    }
  }
  return values;
}

struct TestResult {
  int64_t n_prompt = 0, n_gen = 0;
  std::vector<double> seconds;  // one per repetition
  StepCost cost;                // summed over the test's steps
  nlohmann::json trace = nlohmann::json::array();
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// One run: `depth` random tokens fed untimed (the context already there), then a prompt of
// n_prompt random tokens in one forward step, then n_gen single-token steps. `profile`, when given,
// is attached for the timed steps only.
double run_once(Model& model, int64_t depth, int64_t n_prompt, int64_t n_gen, int n_threads, uint64_t seed,
                TestResult* record, StepProfile* profile = nullptr) {
  SequenceRunner runner(model, std::max<int64_t>(1, depth + n_prompt + n_gen), n_threads);
  const int64_t n_vocab = model.hparams().n_vocab;
  auto random_token = [&](uint64_t i) { return static_cast<int32_t>(splitmix64(seed + i) % static_cast<uint64_t>(n_vocab)); };
  double total = 0.0;
  auto timed_step = [&](const std::vector<int32_t>& tokens) {
    const auto start = std::chrono::steady_clock::now();
    runner.feed(tokens);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total += s;
    if (record) {
      const auto n_tokens = static_cast<int64_t>(tokens.size());
      const StepCost c = estimate_sequence_step_cost(model, runner.n_past() - n_tokens, n_tokens);
      record->cost.flops += c.flops;
      record->cost.weight_bytes += c.weight_bytes;
      record->cost.kv_bytes += c.kv_bytes;
      record->cost.n_tokens += c.n_tokens;
      record->trace.push_back({{"tokens", c.n_tokens}, {"flops", c.flops}, {"weight_bytes", c.weight_bytes},
                               {"kv_bytes", c.kv_bytes}, {"seconds", s}});
    }
  };
  if (depth > 0) {
    std::vector<int32_t> context(static_cast<size_t>(depth));
    for (int64_t i = 0; i < depth; ++i) context[static_cast<size_t>(i)] = random_token(static_cast<uint64_t>(2000000 + i));
    runner.feed(context);
  }
  const ScopedProfile profiling(model, profile);
  if (n_prompt > 0) {
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (int64_t i = 0; i < n_prompt; ++i) prompt[static_cast<size_t>(i)] = random_token(static_cast<uint64_t>(i));
    timed_step(prompt);
  }
  for (int64_t i = 0; i < n_gen; ++i) timed_step({random_token(static_cast<uint64_t>(1000000 + i))});
  return total;
}

std::string now_iso8601() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run_bench(const BenchOptions& options) {
  LoadedModel loaded = load_model(options.source);
  Model& model = *loaded.model;
  const int n_threads = options.n_threads > 0 ? options.n_threads : default_threads();
  const int reps = std::max(1, options.repetitions);
  const MachinePeak peak = measure_machine_peak(n_threads);

  std::vector<std::pair<int64_t, int64_t>> tests;
  for (int64_t p : parse_list(options.prompts, "-p")) if (p > 0) tests.emplace_back(p, 0);
  for (int64_t n : parse_list(options.gens, "-n")) if (n > 0) tests.emplace_back(0, n);
  if (tests.empty()) throw Error("nothing to benchmark: give -p and/or -n with positive sizes");

  nlohmann::json results = nlohmann::json::array();
  nlohmann::json traces = nlohmann::json::object();
  if (!options.json)
    std::printf("model %s, %.1f MiB of weights (%s), isa %s, %d threads; machine: read %.1f GB/s, FMA %.1f GFLOP/s\n",
                options.source.model_path.c_str(), static_cast<double>(model.weight_bytes()) / 1048576.0,
                model.weights_moved() ? "packed / huge-page copies" : "read from the file", isa_name(model.kernels().isa),
                n_threads, peak.read_gb_per_s, peak.gflop_per_s);
  if (!options.json) std::printf("%-14s %14s %10s %10s %8s %8s\n", "test", "t/s", "GB/s", "GFLOP/s", "%bw", "%fma");
  for (const auto& [n_prompt, n_gen] : tests) {
    TestResult result;
    result.n_prompt = n_prompt;
    result.n_gen = n_gen;
    run_once(model, options.depth, n_prompt, n_gen, n_threads, 12345, nullptr);  // warm-up
    StepProfile profile;
    for (int r = 0; r < reps; ++r) {
      TestResult* record = r + 1 == reps ? &result : nullptr;
      // The last repetition is also the profiled one (the clock reads cost well under 1% of a step).
      StepProfile* profiled = record && options.profile ? &profile : nullptr;
      result.seconds.push_back(
          run_once(model, options.depth, n_prompt, n_gen, n_threads, 777 + static_cast<uint64_t>(r), record, profiled));
    }
    const double n_tokens = static_cast<double>(n_prompt + n_gen);
    std::vector<double> ts;
    for (double s : result.seconds) ts.push_back(n_tokens / s);
    const double last = result.seconds.back();
    const double gb_per_s = (result.cost.weight_bytes + result.cost.kv_bytes) / last / 1e9;
    const double gflop_per_s = result.cost.flops / last / 1e9;
    const std::string name = (n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen)) +
                             (options.depth > 0 ? " @ d" + std::to_string(options.depth) : "");
    nlohmann::json row = {{"model_filename", options.source.model_path},
                          {"model_size", model.weight_bytes()},
                          {"n_threads", n_threads},
                          {"n_prompt", n_prompt},
                          {"n_gen", n_gen},
                          {"n_depth", options.depth},
                          {"test", name},
                          {"avg_ts", mean(ts)},
                          {"stddev_ts", stddev(ts)},
                          {"samples_ts", ts},
                          {"avg_ns", mean(result.seconds) * 1e9},
                          {"gb_per_s", gb_per_s},
                          {"gflop_per_s", gflop_per_s},
                          {"machine_read_gb_per_s", peak.read_gb_per_s},
                          {"machine_gflop_per_s", peak.gflop_per_s},
                          {"bandwidth_fraction", gb_per_s / peak.read_gb_per_s},
                          {"compute_fraction", gflop_per_s / peak.gflop_per_s},
                          {"isa", isa_name(model.kernels().isa)},
                          {"test_time", now_iso8601()}};
    if (options.profile) row["profile"] = profile_json(profile);
    results.push_back(row);
    traces[name] = result.trace;
    if (!options.json)
      std::printf("%-14s %8.2f ± %-5.2f %10.2f %10.2f %7.1f%% %7.1f%%\n", name.c_str(), mean(ts), stddev(ts), gb_per_s,
                  gflop_per_s, 100.0 * gb_per_s / peak.read_gb_per_s, 100.0 * gflop_per_s / peak.gflop_per_s);
    if (options.profile && !options.json) print_profile(name, row["profile"]);
    std::fflush(stdout);
  }
  if (options.json) std::printf("%s\n", results.dump(2).c_str());
  if (!options.trace_path.empty()) {
    std::ofstream out(options.trace_path);
    if (!out) throw Error(options.trace_path + ": cannot write the trace");
    out << traces.dump(1) << "\n";
  }
  return 0;
}

}  // namespace

void add_bench_batch_command(CLI::App& bench, std::function<void(Runner)> set_runner);
void add_bench_serve_command(CLI::App& bench, std::function<void(Runner)> set_runner);
void add_bench_spec_command(CLI::App& bench, std::function<void(Runner)> set_runner);
void add_bench_workload_command(CLI::App& bench, std::function<void(Runner)> set_runner);
void add_bench_structured_command(CLI::App& bench, std::function<void(Runner)> set_runner);

Runner add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "prompt-processing and generation throughput (llama-bench style)");
  // `bench batch|serve|spec|workload|structured ...` replace the default runner when it is parsed.
  auto chosen = std::make_shared<Runner>();
  cmd->require_subcommand(0, 1);
  add_bench_batch_command(*cmd, [chosen](Runner r) { *chosen = std::move(r); });
  add_bench_serve_command(*cmd, [chosen](Runner r) { *chosen = std::move(r); });
  add_bench_spec_command(*cmd, [chosen](Runner r) { *chosen = std::move(r); });
  add_bench_workload_command(*cmd, [chosen](Runner r) { *chosen = std::move(r); });
  add_bench_structured_command(*cmd, [chosen](Runner r) { *chosen = std::move(r); });
  add_model_flags(*cmd, options->source);
  cmd->add_option("-p,--n-prompt", options->prompts, "prompt sizes, comma-separated (0 = none)");
  cmd->add_option("-n,--n-gen", options->gens, "generation lengths, comma-separated (0 = none)");
  cmd->add_option("-t,--threads", options->n_threads, "threads")->check(CLI::NonNegativeNumber);
  cmd->add_option("-r,--repetitions", options->repetitions, "repetitions per test")->check(CLI::PositiveNumber);
  cmd->add_option("-d,--n-depth", options->depth, "tokens already in the KV cache before each test (untimed)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", options->json, "print a JSON array (llama-bench field names plus ours)");
  cmd->add_option("--trace", options->trace_path, "write every forward step (tokens, FLOPs, bytes, seconds) as JSON");
  cmd->add_flag("--profile", options->profile,
                "split each test's steps into matmul time per weight type (with activation quantization and idle "
                "threads), attention and the other operators");
  return [options, chosen] { return *chosen ? (*chosen)() : run_bench(*options); };
}

}  // namespace nucleus::cli
