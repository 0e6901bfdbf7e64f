// nucleus bench batch: throughput and latency of the continuous-batching engine per batch size
// (B requests of `prompt` random tokens, each generating `gen` tokens, all submitted at once), and
// what the decode phase achieves against this machine's measured peaks: GFLOP/s and GB/s (as
// `nucleus bench` reports them), with --profile the split of its steps per weight type.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/bench_common.h"
#include "cli/bench_profile.h"
#include "cli/commands.h"
#include "core/error.h"
#include "engine/batch_benchmark.h"
#include "kernels/machine_peak.h"

namespace nucleus::cli {

namespace {

struct BatchBenchOptions {
  ModelSource source;
  std::string batches = "1,2,4,8,16,32";
  int64_t prompt = 128, gen = 128;
  int n_threads = 0;
  int64_t max_batched_tokens = 2048;
  std::string kv_type = "f32";
  bool json = false;
  bool profile = false;
  std::string svg_path;
};

int run_bench_batch(const BatchBenchOptions& o) {
  const KvType kv_type = parse_kv_type(o.kv_type);
  LoadedModel loaded = load_model(o.source);
  const int n_threads = o.n_threads > 0 ? o.n_threads : default_threads();
  std::vector<BatchPoint> points;
  std::vector<int64_t> sizes;
  {
    std::stringstream ss(o.batches);
    std::string item;
    while (std::getline(ss, item, ',')) {
      try {
        const long long v = std::stoll(item);
        if (v <= 0) throw std::invalid_argument(item);
        sizes.push_back(v);
      } catch (const std::exception&) {
        throw Error("--batch: '" + item + "' is not a positive integer");
      }
    }
  }
  const MachinePeak peak = measure_machine_peak(n_threads);
  if (!o.json) {
    std::printf("machine: read %.1f GB/s, FMA %.1f GFLOP/s, %d threads; GFLOP/s and GB/s over the decode phase\n",
                peak.read_gb_per_s, peak.gflop_per_s, n_threads);
    std::printf("%6s %12s %12s %10s %10s %10s %7s %8s %7s\n", "batch", "gen tok/s", "total tok/s", "TTFT ms", "TPOT ms",
                "GFLOP/s", "%fma", "GB/s", "%bw");
  }
  BatchBenchmarkConfig config;
  config.n_prompt = o.prompt;
  config.n_gen = o.gen;
  config.max_num_batched_tokens = o.max_batched_tokens;
  config.n_threads = n_threads;
  config.kv_type = kv_type;
  std::vector<nlohmann::json> profiles;
  auto gflop_per_s = [](const BatchPoint& p) { return p.decode_seconds > 0 ? p.decode_flops / p.decode_seconds / 1e9 : 0.0; };
  auto gb_per_s = [](const BatchPoint& p) { return p.decode_seconds > 0 ? p.decode_bytes / p.decode_seconds / 1e9 : 0.0; };
  for (int64_t b : sizes) {
    StepProfile profile;
    config.decode_profile = o.profile ? &profile : nullptr;
    points.push_back(measure_batch(*loaded.model, config, b));
    const BatchPoint& p = points.back();
    profiles.push_back(o.profile ? profile_json(profile) : nlohmann::json());
    if (!o.json) {
      std::printf("%6lld %12.2f %12.2f %10.1f %10.2f %10.2f %6.1f%% %8.2f %6.1f%%\n", static_cast<long long>(b), p.gen_tok_s,
                  p.total_tok_s, p.ttft_ms, p.tpot_ms, gflop_per_s(p), 100.0 * gflop_per_s(p) / peak.gflop_per_s, gb_per_s(p),
                  100.0 * gb_per_s(p) / peak.read_gb_per_s);
      if (o.profile) print_profile("batch " + std::to_string(b) + " decode", profiles.back());
    }
    std::fflush(stdout);
  }
  const int64_t knee = find_knee(points);  // the smallest batch reaching 90% of the best generation throughput
  const int64_t linear_limit = find_linear_limit(points);  // the last batch still ≥ 80% per-sequence efficient
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < points.size(); ++i) {
      const BatchPoint& p = points[i];
      nlohmann::json row = {{"batch", p.batch}, {"gen_tok_s", p.gen_tok_s}, {"total_tok_s", p.total_tok_s},
                            {"ttft_ms", p.ttft_ms}, {"tpot_ms", p.tpot_ms}, {"seconds", p.seconds},
                            {"n_prompt", o.prompt}, {"n_gen", o.gen}, {"n_threads", n_threads}, {"knee", p.batch == knee},
                            {"linear_limit", p.batch == linear_limit},
                            {"decode_steps", p.decode_steps}, {"decode_seconds", p.decode_seconds},
                            {"decode_flops", p.decode_flops}, {"decode_bytes", p.decode_bytes},
                            {"gflop_per_s", gflop_per_s(p)}, {"gb_per_s", gb_per_s(p)},
                            {"machine_gflop_per_s", peak.gflop_per_s}, {"machine_read_gb_per_s", peak.read_gb_per_s},
                            {"compute_fraction", gflop_per_s(p) / peak.gflop_per_s},
                            {"bandwidth_fraction", gb_per_s(p) / peak.read_gb_per_s}};
      if (o.profile) row["profile"] = profiles[i];
      arr.push_back(row);
    }
    std::printf("%s\n", arr.dump(2).c_str());
  } else {
    std::printf("knee: batch %lld (smallest reaching 90%% of the best generation throughput)\n", static_cast<long long>(knee));
    std::printf("linear up to: batch %lld (each sequence still at >= 80%% of batch %lld's per-sequence rate)\n",
                static_cast<long long>(linear_limit), static_cast<long long>(points.empty() ? 0 : points.front().batch));
  }
  if (!o.svg_path.empty()) {
    std::vector<SvgSeries> series(2);
    series[0] = {"generation tok/s", "#1f77b4", {}};
    series[1] = {"TPOT ms", "#d62728", {}};
    for (const BatchPoint& p : points) {
      series[0].points.emplace_back(static_cast<double>(p.batch), p.gen_tok_s);
      series[1].points.emplace_back(static_cast<double>(p.batch), p.tpot_ms);
    }
    write_svg_plot(o.svg_path, "Batched decoding: throughput and latency per batch size", "batch size (log2)", series,
                   static_cast<double>(knee), "knee");
  }
  return 0;
}

}  // namespace

void add_bench_batch_command(CLI::App& bench, std::function<void(Runner)> set_runner) {
  auto o = std::make_shared<BatchBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("batch", "throughput and latency per batch size (continuous batching)");
  add_model_flags(*cmd, o->source);
  cmd->add_option("--batch", o->batches, "batch sizes, comma-separated");
  cmd->add_option("--prompt", o->prompt, "prompt tokens per request")->check(CLI::PositiveNumber);
  cmd->add_option("--gen", o->gen, "generated tokens per request")->check(CLI::PositiveNumber);
  cmd->add_option("--max-num-batched-tokens", o->max_batched_tokens, "token budget per step")->check(CLI::PositiveNumber);
  cmd->add_option("--kv-type", o->kv_type, "KV cache element type: f32 or f16");
  cmd->add_option("-t,--threads", o->n_threads, "threads")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "JSON array: batch, gen_tok_s, ttft_ms, tpot_ms, gflop_per_s, compute_fraction, ...");
  cmd->add_flag("--profile", o->profile,
                "split each batch size's decode steps into matmul time per weight type (with activation quantization "
                "and idle threads), attention and the other operators");
  cmd->add_option("--svg", o->svg_path, "write an SVG plot with the knee marked");
  cmd->callback([o, set_runner] { set_runner([o] { return run_bench_batch(*o); }); });
}

}  // namespace nucleus::cli
