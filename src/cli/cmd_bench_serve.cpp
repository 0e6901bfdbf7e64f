// nucleus bench serve: a load generator for the OpenAI-compatible server in the spirit of `vllm bench
// serve`. For each request rate it sends --num-prompts streaming completions with Poisson arrivals
// (exponential gaps from a seeded generator; rate "inf" sends them all at once) and reports
// throughput, time to first token (TTFT), time per output token after the first (TPOT), inter-token
// latency (ITL, gaps between streamed chunks) and end-to-end latency, plus the failed requests.
// Prompts are --prompt-len tokens drawn (seeded) from the server's own tokenization of a fixed text,
// so they are valid for any vocabulary; --output-len tokens are generated with ignore_eos.
// --workload sessions: multi-turn sessions with shared prefixes instead (bench_serve_sessions.h).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "cli/bench_serve_sessions.h"
#include "cli/commands.h"
#include "cli/serve_client.h"
#include "cli/server_process.h"
#include "core/error.h"
#include "core/latency_summary.h"
#include "core/rng.h"

namespace nucleus::cli {

namespace {

using nlohmann::json;

struct ServeBenchOptions {
  std::string url;  // empty: start `nucleus serve -m MODEL`
  std::string model_path = kDefaultModel;
  std::string api_key;
  std::string rates = "1,2,4";
  int64_t num_prompts = 20, prompt_len = 32, output_len = 16;
  int64_t max_num_seqs = 64;
  int n_threads = 0;
  uint64_t seed = 0;
  bool json = false;
  std::string workload = "poisson";  // or "sessions"
  SessionWorkload sessions;          // --workload sessions (its URL, key, model and seed are filled in)
  std::string replica_urls;          // comma-separated
};

struct RatePoint {
  double rate = 0;  // requests per second; infinity: all at once
  int64_t completed = 0, failed = 0, prompt_tokens = 0, output_tokens = 0;
  double seconds = 0;  // first request sent → last response ended
  LatencySummary ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::vector<std::string> errors;  // the first few
};

std::vector<double> parse_rates(const std::string& text) {
  std::vector<double> rates;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "inf") {
      rates.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    try {
      size_t used = 0;
      const double r = std::stod(item, &used);
      if (used != item.size() || !(r > 0) || !std::isfinite(r)) throw std::invalid_argument(item);
      rates.push_back(r);
    } catch (const std::exception&) {
      throw Error("--rate: '" + item + "' is not a positive number or 'inf'");
    }
  }
  if (rates.empty()) throw Error("--rate: no rates given");
  return rates;
}

json get_json(httplib::Client& client, const char* path, const httplib::Headers& headers) {
  auto r = client.Get(path, headers);
  if (!r || r->status != 200) throw Error(std::string("bench serve: GET ") + path + " failed");
  return json::parse(r->body);
}

// The token ids prompts are drawn from: the server's tokenization of a plain passage.
std::vector<int32_t> prompt_token_pool(httplib::Client& client, const httplib::Headers& headers) {
  const std::string passage =
      "Once upon a time, there was a little girl named Lily. She liked to play outside in the park with her "
      "friends. One day, she saw a big red ball under a tall tree. The sun was warm and the birds sang.";
  auto r = client.Post("/tokenize", headers, json{{"prompt", passage}, {"add_special_tokens", false}}.dump(), "application/json");
  if (!r || r->status != 200) throw Error("bench serve: POST /tokenize failed");
  std::vector<int32_t> tokens = json::parse(r->body)["tokens"].get<std::vector<int32_t>>();
  if (tokens.empty()) throw Error("bench serve: the server tokenized the prompt passage to nothing");
  return tokens;
}

RatePoint run_rate(const ServeBenchOptions& o, const std::string& base_url, const std::string& model, double rate,
                   const std::vector<int32_t>& pool, uint64_t rate_index) {
  // Arrival times and prompts depend only on (seed, rate index, request index).
  std::vector<double> arrivals(static_cast<size_t>(o.num_prompts), 0.0);
  std::vector<json> bodies;
  double t = 0;
  for (int64_t i = 0; i < o.num_prompts; ++i) {
    const uint64_t stream = rate_index * 1000003 + static_cast<uint64_t>(i);
    if (std::isfinite(rate) && i > 0) t += -std::log(1.0 - uniform_at(o.seed, stream, 1)) / rate;
    arrivals[static_cast<size_t>(i)] = t;
    std::vector<int32_t> prompt;
    for (int64_t k = 0; k < o.prompt_len; ++k)
      prompt.push_back(pool[static_cast<size_t>(uniform_at(o.seed, stream * 4096 + static_cast<uint64_t>(k), 2) *
                                                static_cast<double>(pool.size()))]);
    bodies.push_back({{"model", model}, {"prompt", prompt}, {"max_tokens", o.output_len}, {"ignore_eos", true},
                      {"temperature", 0.0}});
  }
  std::vector<StreamTiming> timings(static_cast<size_t>(o.num_prompts));
  std::vector<std::thread> clients;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < bodies.size(); ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration<double>(arrivals[i]));
    clients.emplace_back([&, i] { timings[i] = stream_completion(base_url, o.api_key, bodies[i]); });
  }
  for (std::thread& c : clients) c.join();

  RatePoint p;
  p.rate = rate;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> ttft, tpot, itl, e2e;
  for (const StreamTiming& s : timings) {
    if (!s.ok) {
      ++p.failed;
      if (p.errors.size() < 5) p.errors.push_back(s.error);
      continue;
    }
    ++p.completed;
    p.prompt_tokens += s.prompt_tokens;
    p.output_tokens += s.output_tokens;
    ttft.push_back(1000 * s.ttft_seconds);
    e2e.push_back(1000 * s.latency_seconds);
    if (s.output_tokens > 1) tpot.push_back(1000 * (s.latency_seconds - s.ttft_seconds) / static_cast<double>(s.output_tokens - 1));
    for (double gap : s.chunk_gaps) itl.push_back(1000 * gap);
  }
  p.ttft_ms = summarize(ttft);
  p.tpot_ms = summarize(tpot);
  p.itl_ms = summarize(itl);
  p.e2e_ms = summarize(e2e);
  return p;
}

json summary_json(const LatencySummary& s) { return {{"mean", s.mean}, {"p50", s.p50}, {"p99", s.p99}}; }

json point_json(const RatePoint& p) {
  return {{"request_rate", std::isfinite(p.rate) ? json(p.rate) : json("inf")},
          {"completed", p.completed},
          {"failed", p.failed},
          {"errors", p.errors},
          {"duration_s", p.seconds},
          {"prompt_tokens", p.prompt_tokens},
          {"output_tokens", p.output_tokens},
          {"request_throughput", p.completed / p.seconds},
          {"output_throughput", static_cast<double>(p.output_tokens) / p.seconds},
          {"ttft_ms", summary_json(p.ttft_ms)},
          {"tpot_ms", summary_json(p.tpot_ms)},
          {"itl_ms", summary_json(p.itl_ms)},
          {"e2e_latency_ms", summary_json(p.e2e_ms)}};
}

void print_row(const RatePoint& p) {
  char rate[16];
  if (std::isfinite(p.rate)) {
    std::snprintf(rate, sizeof rate, "%.2f", p.rate);
  } else {
    std::snprintf(rate, sizeof rate, "inf");
  }
  std::printf("%6s %5lld %4lld %8.2f %9.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f\n", rate,
              static_cast<long long>(p.completed), static_cast<long long>(p.failed), p.completed / p.seconds,
              static_cast<double>(p.output_tokens) / p.seconds, p.ttft_ms.mean, p.ttft_ms.p50, p.ttft_ms.p99, p.tpot_ms.mean,
              p.tpot_ms.p99, p.e2e_ms.p50, p.e2e_ms.p99);
  for (const std::string& e : p.errors) std::printf("       error: %s\n", e.c_str());
  std::fflush(stdout);
}

int run_bench_serve(const ServeBenchOptions& o) {
  const std::vector<double> rates = parse_rates(o.rates);
  std::unique_ptr<ServerProcess> server;
  std::string base_url = o.url;
  if (base_url.empty()) {
    std::vector<std::string> args = {"-m", o.model_path, "--max-num-seqs", std::to_string(o.max_num_seqs)};
    if (!o.api_key.empty()) args.insert(args.end(), {"--api-key", o.api_key});
    if (o.n_threads > 0) args.insert(args.end(), {"-t", std::to_string(o.n_threads)});
    server = std::make_unique<ServerProcess>(args, 300.0);
    base_url = server->base_url();
  }
  httplib::Client client(base_url);
  client.set_read_timeout(60, 0);
  httplib::Headers headers;
  if (!o.api_key.empty()) headers.emplace("Authorization", "Bearer " + o.api_key);
  const json models = get_json(client, "/v1/models", headers);
  if (models["data"].empty()) throw Error("bench serve: the server lists no model");
  const std::string model = models["data"][0]["id"];
  if (o.workload == "sessions") {
    SessionWorkload w = o.sessions;
    w.base_url = base_url;
    w.api_key = o.api_key;
    w.model = model;
    w.output_len = o.output_len;
    w.seed = o.seed;
    std::stringstream urls(o.replica_urls);
    for (std::string url; std::getline(urls, url, ',');)
      if (!url.empty()) w.replica_urls.push_back(url);
    if (w.replica_urls.empty()) w.replica_urls.push_back(base_url);  // one server: its own counters
    const json report = run_session_workload(w);
    if (o.json) {
      std::printf("%s\n", report.dump(2).c_str());
    } else {
      print_session_report(report);
    }
    return report["failed"].get<int64_t>() == 0 ? 0 : 1;
  }
  const std::vector<int32_t> pool = prompt_token_pool(client, headers);

  if (!o.json) {
    std::printf("bench serve: %s, model %s, %lld requests per rate, prompt %lld tokens, output %lld tokens\n", base_url.c_str(),
                model.c_str(), static_cast<long long>(o.num_prompts), static_cast<long long>(o.prompt_len),
                static_cast<long long>(o.output_len));
    std::printf("%6s %5s %4s %8s %9s %8s %8s %8s %8s %8s %8s %8s\n", "rate", "done", "fail", "req/s", "out tok/s", "TTFT avg",
                "TTFT p50", "TTFT p99", "TPOT avg", "TPOT p99", "E2E p50", "E2E p99");
    std::printf("%6s %5s %4s %8s %9s %8s %8s %8s %8s %8s %8s %8s\n", "req/s", "", "", "", "", "ms", "ms", "ms", "ms", "ms", "ms", "ms");
  }
  json results = json::array();
  int64_t failed = 0;
  for (size_t r = 0; r < rates.size(); ++r) {
    const RatePoint p = run_rate(o, base_url, model, rates[r], pool, r);
    failed += p.failed;
    results.push_back(point_json(p));
    if (!o.json) print_row(p);
  }
  if (o.json) std::printf("%s\n", results.dump(2).c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_bench_serve_command(CLI::App& bench, std::function<void(Runner)> set_runner) {
  auto o = std::make_shared<ServeBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("serve", "load-test the OpenAI-compatible server: Poisson arrivals per request rate");
  cmd->add_option("--url", o->url, "server to target, e.g. http://127.0.0.1:8080 (default: start `nucleus serve -m MODEL`)");
  cmd->add_option("-m,--model", o->model_path, "model for the server this command starts");
  cmd->add_option("-t,--threads", o->n_threads, "compute threads of the started server (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-num-seqs", o->max_num_seqs, "sequences the started server runs at once")->check(CLI::Range(1, 4096));
  cmd->add_option("--api-key", o->api_key, "sent as 'Authorization: Bearer KEY' (and required by the started server)");
  cmd->add_option("--rate", o->rates, "request rates in requests/s, comma-separated; 'inf' sends all at once");
  cmd->add_option("--num-prompts", o->num_prompts, "requests per rate")->check(CLI::Range(1, 100000));
  cmd->add_option("--prompt-len", o->prompt_len, "prompt tokens per request")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--output-len", o->output_len, "generated tokens per request (ignore_eos)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--seed", o->seed, "seed of the arrival times and prompts");
  cmd->add_flag("--json", o->json, "print a JSON array, one object per rate");
  cmd->add_option("--workload", o->workload, "poisson: independent random prompts per rate; sessions: multi-turn shared prefixes")
      ->check(CLI::IsMember({"poisson", "sessions"}));
  cmd->add_option("--sessions", o->sessions.sessions, "sessions workload: concurrent sessions")->check(CLI::Range(1, 4096));
  cmd->add_option("--turns", o->sessions.turns, "sessions workload: requests per session, each extending the last")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--prefix-words", o->sessions.prefix_words, "sessions workload: words of each session's opening")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--turn-words", o->sessions.turn_words, "sessions workload: words each turn adds")->check(CLI::Range(1, 100000));
  cmd->add_flag("--session-header", o->sessions.session_header, "sessions workload: send x-session-id with every request");
  cmd->add_option("--replica-urls", o->replica_urls,
                  "sessions workload: comma-separated replica URLs whose /metrics give per-replica prefix-hit rates "
                  "(default: --url itself)");
  cmd->callback([o, set_runner] { set_runner([o] { return run_bench_serve(*o); }); });
}

}  // namespace nucleus::cli
