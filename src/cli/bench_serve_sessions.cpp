#include "cli/bench_serve_sessions.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/serve_client.h"
#include "core/error.h"
#include "core/latency_summary.h"
#include "core/rng.h"

namespace nucleus::cli {

namespace {

using nlohmann::json;

// Plain words every vocabulary tokenizes: the passages are drawn (seeded) from them.
constexpr const char* kWords[] = {"once", "upon", "a", "time", "there", "was", "little", "girl", "named", "Lily",
                                  "she", "liked", "to", "play", "outside", "in", "the", "park", "with", "her",
                                  "friends", "one", "day", "saw", "big", "red", "ball", "under", "tall", "tree",
                                  "sun", "warm", "and", "birds", "sang", "Tom", "dog", "cat", "happy", "said"};
constexpr size_t kNumWords = sizeof kWords / sizeof kWords[0];

std::string words(uint64_t seed, uint64_t stream, int64_t count) {
  std::string out;
  for (int64_t k = 0; k < count; ++k) {
    if (k > 0) out += ' ';
    out += kWords[static_cast<size_t>(uniform_at(seed, stream * 65536 + static_cast<uint64_t>(k), 3) * kNumWords) % kNumWords];
  }
  return out;
}

struct PrefixCounters {
  double queries = 0, hits = 0;
};

double metric_value(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  throw Error("bench serve: no " + name + " in /metrics");
}

PrefixCounters read_prefix_counters(const std::string& url, const std::string& api_key) {
  httplib::Client client(url);
  client.set_connection_timeout(5, 0);
  httplib::Headers headers;
  if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
  auto r = client.Get("/metrics", headers);
  if (!r || r->status != 200) throw Error("bench serve: GET " + url + "/metrics failed");
  return {metric_value(r->body, "vllm:prefix_cache_queries_total"), metric_value(r->body, "vllm:prefix_cache_hits_total")};
}

json summary(const std::vector<double>& values) {
  const LatencySummary s = summarize(values);
  return {{"mean", s.mean}, {"p50", s.p50}, {"p99", s.p99}};
}

}  // namespace

json run_session_workload(const SessionWorkload& w) {
  std::vector<PrefixCounters> before;
  for (const std::string& url : w.replica_urls) before.push_back(read_prefix_counters(url, w.api_key));

  struct Result {
    StreamTiming timing;
    int64_t turn = 0;
  };
  std::vector<std::vector<Result>> results(static_cast<size_t>(w.sessions));
  std::vector<std::thread> sessions;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < w.sessions; ++s) {
    sessions.emplace_back([&, s] {
      // The session's own opening, then a few new words per turn: each prompt extends the last.
      std::string prompt = "Story " + std::to_string(s) + ": " + words(w.seed, static_cast<uint64_t>(s) * 1024, w.prefix_words);
      ExtraHeaders headers;
      if (w.session_header) headers.emplace_back("x-session-id", "s" + std::to_string(s));
      for (int64_t t = 0; t < w.turns; ++t) {
        prompt += " " + words(w.seed, static_cast<uint64_t>(s) * 1024 + 1 + static_cast<uint64_t>(t), w.turn_words);
        const json body = {{"model", w.model}, {"prompt", prompt}, {"max_tokens", w.output_len},
                           {"ignore_eos", true}, {"temperature", 0.0}};
        results[static_cast<size_t>(s)].push_back({stream_completion(w.base_url, w.api_key, body, headers), t});
      }
    });
  }
  for (std::thread& t : sessions) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<double> ttft_ms, ttft_first_ms, ttft_later_ms;
  int64_t completed = 0, failed = 0, output_tokens = 0;
  json errors = json::array();
  std::map<std::string, int64_t> requests_by_replica;
  std::map<std::string, std::map<std::string, int64_t>> sessions_by_replica;  // replica -> session ids
  for (int64_t s = 0; s < w.sessions; ++s) {
    for (const Result& r : results[static_cast<size_t>(s)]) {
      if (!r.timing.ok) {
        ++failed;
        if (errors.size() < 5) errors.push_back(r.timing.error);
        continue;
      }
      ++completed;
      output_tokens += r.timing.output_tokens;
      ttft_ms.push_back(1000 * r.timing.ttft_seconds);
      (r.turn == 0 ? ttft_first_ms : ttft_later_ms).push_back(1000 * r.timing.ttft_seconds);
      ++requests_by_replica[r.timing.replica];
      ++sessions_by_replica[r.timing.replica][std::to_string(s)];
    }
  }
  json replicas = json::array();
  double queries = 0, hits = 0;
  for (size_t i = 0; i < w.replica_urls.size(); ++i) {
    const PrefixCounters after = read_prefix_counters(w.replica_urls[i], w.api_key);
    const double q = after.queries - before[i].queries, h = after.hits - before[i].hits;
    queries += q;
    hits += h;
    replicas.push_back({{"url", w.replica_urls[i]}, {"prefix_cache_queries", q}, {"prefix_cache_hits", h},
                        {"prefix_hit_rate", q > 0 ? h / q : 0.0}});
  }
  json by_replica = json::object();
  for (const auto& [replica, n] : requests_by_replica)
    by_replica[replica.empty() ? "(no header)" : replica] = {{"requests", n},
                                                             {"sessions", sessions_by_replica[replica].size()}};
  return {{"sessions", w.sessions},
          {"turns", w.turns},
          {"session_header", w.session_header},
          {"completed", completed},
          {"failed", failed},
          {"errors", errors},
          {"duration_s", seconds},
          {"request_throughput", completed / seconds},
          {"output_throughput", static_cast<double>(output_tokens) / seconds},
          {"ttft_ms", summary(ttft_ms)},
          {"ttft_first_turn_ms", summary(ttft_first_ms)},
          {"ttft_later_turns_ms", summary(ttft_later_ms)},
          {"prefix_hit_rate", queries > 0 ? hits / queries : 0.0},
          {"answered_by", by_replica},
          {"replicas", replicas}};
}

void print_session_report(const json& r) {
  std::printf("sessions workload: %lld sessions x %lld turns%s\n", static_cast<long long>(r["sessions"].get<int64_t>()),
              static_cast<long long>(r["turns"].get<int64_t>()), r["session_header"].get<bool>() ? ", x-session-id sent" : "");
  std::printf("  done %lld, failed %lld, %.2f req/s, %.1f out tok/s\n", static_cast<long long>(r["completed"].get<int64_t>()),
              static_cast<long long>(r["failed"].get<int64_t>()), r["request_throughput"].get<double>(),
              r["output_throughput"].get<double>());
  std::printf("  TTFT ms p50 %.1f p99 %.1f (first turns p50 %.1f, later turns p50 %.1f)\n", r["ttft_ms"]["p50"].get<double>(),
              r["ttft_ms"]["p99"].get<double>(), r["ttft_first_turn_ms"]["p50"].get<double>(),
              r["ttft_later_turns_ms"]["p50"].get<double>());
  std::printf("  prefix-cache hit rate over all replicas: %.3f\n", r["prefix_hit_rate"].get<double>());
  for (const auto& [replica, v] : r["answered_by"].items())
    std::printf("  replica %s: %lld requests from %lld sessions\n", replica.c_str(),
                static_cast<long long>(v["requests"].get<int64_t>()), static_cast<long long>(v["sessions"].get<int64_t>()));
  for (const json& v : r["replicas"])
    std::printf("  %s: prefix hits %.0f / %.0f tokens = %.3f\n", v["url"].get<std::string>().c_str(),
                v["prefix_cache_hits"].get<double>(), v["prefix_cache_queries"].get<double>(), v["prefix_hit_rate"].get<double>());
  for (const json& e : r["errors"]) std::printf("  error: %s\n", e.get<std::string>().c_str());
  std::fflush(stdout);
}

}  // namespace nucleus::cli
