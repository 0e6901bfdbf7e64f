// nucleus bench batch: throughput and latency of the continuous-batching engine per batch size
// (B requests of `prompt` random tokens, each generating `gen` tokens, all submitted at once).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/bench_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/rng.h"
#include "engine/llm_engine.h"

namespace nucleus::cli {

namespace {

struct BatchBenchOptions {
  ModelSource source;
  std::string batches = "1,2,4,8,16,32";
  int64_t prompt = 128, gen = 128;
  int n_threads = 0;
  int64_t max_batched_tokens = 2048;
  bool json = false;
  std::string svg_path;
};

struct BatchPoint {
  int64_t batch = 0;
  double gen_tok_s = 0, total_tok_s = 0, ttft_ms = 0, tpot_ms = 0, seconds = 0;
};

BatchPoint run_batch(Model& model, const BatchBenchOptions& o, int64_t batch, int n_threads) {
  EngineConfig config;
  config.n_threads = n_threads;
  config.block_size = 16;
  config.num_blocks = batch * ((o.prompt + o.gen + 15) / 16 + 1);
  config.max_num_seqs = batch;
  config.max_num_batched_tokens = std::max<int64_t>(o.max_batched_tokens, batch);
  config.enable_prefix_caching = false;  // random prompts share nothing; measure the plain engine
  LLMEngine engine(model, nullptr, config);
  const int64_t n_vocab = model.hparams().n_vocab;
  std::vector<double> first(static_cast<size_t>(batch), -1.0), last(static_cast<size_t>(batch), 0.0);
  std::vector<int64_t> ids;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int32_t> prompt;
    for (int64_t i = 0; i < o.prompt; ++i)
      prompt.push_back(static_cast<int32_t>(splitmix64(static_cast<uint64_t>(b * 100003 + i)) % static_cast<uint64_t>(n_vocab)));
    RequestOptions ro;
    ro.sampling.temperature = 0.0f;
    ro.stop.max_tokens = static_cast<int32_t>(o.gen);
    ro.stop.ignore_eos = true;
    ids.push_back(engine.add_request(std::move(prompt), ro));
  }
  const auto start = std::chrono::steady_clock::now();
  auto now = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (engine.has_unfinished()) {
    for (const RequestOutput& out : engine.step()) {
      const size_t i = static_cast<size_t>(std::find(ids.begin(), ids.end(), out.request_id) - ids.begin());
      const double t = now();
      if (first[i] < 0) first[i] = t;
      last[i] = t;
    }
  }
  BatchPoint p;
  p.batch = batch;
  p.seconds = now();
  const double decode_start = *std::max_element(first.begin(), first.end());  // all have their first token
  double ttft = 0, tpot = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    ttft += first[i];
    if (o.gen > 1) tpot += (last[i] - first[i]) / static_cast<double>(o.gen - 1);
  }
  p.ttft_ms = 1000.0 * ttft / static_cast<double>(batch);
  p.tpot_ms = 1000.0 * tpot / static_cast<double>(batch);
  // Generation throughput over the decode phase (llama-batched-bench's S_TG): the tokens generated
  // after every request had its first one, over that time.
  const double decode_seconds = p.seconds - decode_start;
  p.gen_tok_s = decode_seconds > 0 ? static_cast<double>(batch * (o.gen - 1)) / decode_seconds : 0.0;
  p.total_tok_s = static_cast<double>(batch * (o.prompt + o.gen)) / p.seconds;
  return p;
}

int run_bench_batch(const BatchBenchOptions& o) {
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
  if (!o.json) std::printf("%6s %12s %12s %10s %10s\n", "batch", "gen tok/s", "total tok/s", "TTFT ms", "TPOT ms");
  for (int64_t b : sizes) {
    points.push_back(run_batch(*loaded.model, o, b, n_threads));
    const BatchPoint& p = points.back();
    if (!o.json) std::printf("%6lld %12.2f %12.2f %10.1f %10.2f\n", static_cast<long long>(b), p.gen_tok_s, p.total_tok_s, p.ttft_ms, p.tpot_ms);
    std::fflush(stdout);
  }
  // The knee: the smallest batch reaching 90% of the best generation throughput.
  double best = 0;
  for (const BatchPoint& p : points) best = std::max(best, p.gen_tok_s);
  int64_t knee = points.empty() ? 0 : points.back().batch;
  for (const BatchPoint& p : points)
    if (p.gen_tok_s >= 0.9 * best) {
      knee = p.batch;
      break;
    }
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const BatchPoint& p : points)
      arr.push_back({{"batch", p.batch}, {"gen_tok_s", p.gen_tok_s}, {"total_tok_s", p.total_tok_s}, {"ttft_ms", p.ttft_ms},
                     {"tpot_ms", p.tpot_ms}, {"seconds", p.seconds}, {"n_prompt", o.prompt}, {"n_gen", o.gen},
                     {"n_threads", n_threads}, {"knee", p.batch == knee}});
    std::printf("%s\n", arr.dump(2).c_str());
  } else {
    std::printf("knee: batch %lld (smallest reaching 90%% of the best generation throughput)\n", static_cast<long long>(knee));
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
  cmd->add_option("-t,--threads", o->n_threads, "threads")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "JSON array: batch, gen_tok_s, ttft_ms, tpot_ms, ...");
  cmd->add_option("--svg", o->svg_path, "write an SVG plot with the knee marked");
  cmd->callback([o, set_runner] { set_runner([o] { return run_bench_batch(*o); }); });
}

}  // namespace nucleus::cli
