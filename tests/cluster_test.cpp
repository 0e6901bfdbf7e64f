// Replicas behind HAProxy (scripts/cluster.sh, deploy/haproxy/nucleus.cfg) on loopback: three
// `nucleus serve` replicas of stories260K. Affinity by session header and by shared prompt prefix
// (with the replicas' own prefix-cache counters), a replica killed under load, a replica drained
// with SIGTERM under load, and the vLLM-named metrics against the engine's stats.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process_helpers.h"
#include "server_test_harness.h"

namespace nucleus::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string default_model() { return std::string(NUCLEUS_SOURCE_DIR) + "/models/stories260K.gguf"; }

// One answer through the balancer, as a client sees it.
struct Answer {
  int status = 0;                // 0: no HTTP response
  std::string replica;           // x-nucleus-replica
  bool ok = false;               // 200 and, for a stream, "data: [DONE]" seen
  std::string error;
  double started = 0, ended = 0;  // seconds since the test's clock started
};

Answer complete(int port, const json& body, const std::string& session, Clock::time_point epoch, bool stream = false) {
  Answer a;
  a.started = seconds_since(epoch);
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);  // a request that hangs fails the test instead of hanging it
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  json b = body;
  if (stream) b["stream"] = true;
  request.body = b.dump();
  request.headers.emplace("Content-Type", "application/json");
  if (!session.empty()) request.headers.emplace("x-session-id", session);
  std::string received;
  if (stream) request.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    return true;
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(request, response, error);
  a.ended = seconds_since(epoch);
  a.status = response.status > 0 ? response.status : 0;
  a.replica = response.get_header_value("x-nucleus-replica");
  if (!sent) a.error = "client: " + httplib::to_string(error);
  const std::string& text = stream ? received : response.body;
  a.ok = sent && a.status == 200 && (!stream || text.find("data: [DONE]") != std::string::npos);
  if (!a.ok && a.error.empty()) a.error = "HTTP " + std::to_string(a.status) + ": " + text.substr(0, 200);
  return a;
}

double scrape(int port, const std::string& series) {
  const double value = metric_value(get(port, "/metrics").body, series);
  if (value < 0) ADD_FAILURE() << "no " << series << " on port " << port;
  return value;
}

// scripts/cluster.sh with three replicas, started for one test and stopped (SIGTERM to the script,
// which stops what it started) at its end.
class Cluster {
 public:
  static constexpr int kReplicas = 3;

  Cluster() {
    port_ = free_port_range(kReplicas + 1);
    run_dir_ = std::filesystem::temp_directory_path() / ("nucleus-cluster-test-" + std::to_string(::getpid()) + "-" +
                                                         std::to_string(port_));
    std::filesystem::create_directories(run_dir_);
    ::setenv("NUCLEUS_BINARY", nucleus_binary().c_str(), 1);
    pid_ = spawn_process({"/bin/bash", std::string(NUCLEUS_SOURCE_DIR) + "/scripts/cluster.sh", "-m", default_model(),
                          "--replicas", std::to_string(kReplicas), "--port", std::to_string(port_), "--run-dir",
                          run_dir_.string(), "--", "-t", "1", "--kv-cache-mem", "32", "--shutdown-timeout", "20"},
                         (run_dir_ / "cluster.log").string());
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < deadline && read_log().find("cluster: ready") == std::string::npos) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ready_ = read_log().find("cluster: ready") != std::string::npos;
  }
  ~Cluster() {
    for (pid_t p : restarted_) {
      ::kill(p, SIGTERM);
      wait_exit(p, 30);
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      if (wait_exit(pid_, 60) < 0) ::kill(-pid_, SIGKILL);
    }
    std::error_code ignored;
    std::filesystem::remove_all(run_dir_, ignored);
  }

  bool ready() const { return ready_; }
  int port() const { return port_; }
  int replica_port(int i) const { return port_ + i; }
  std::string read_log() const {
    try {
      return read_file((run_dir_ / "cluster.log").string());
    } catch (const std::exception&) {
      return "";
    }
  }
  std::string logs() const {
    std::string out = read_log();
    for (int i = 1; i <= kReplicas; ++i) {
      try {
        out += "\n--- replica " + std::to_string(i) + "\n" + read_file((run_dir_ / ("replica" + std::to_string(i) + ".log")).string());
      } catch (const std::exception&) {
      }
    }
    return out;
  }
  pid_t replica_pid(int i) const {
    return static_cast<pid_t>(std::stol(read_file((run_dir_ / ("replica" + std::to_string(i) + ".pid")).string())));
  }
  // Starts replica i again as the script did; true once it answers /health.
  bool restart(int i) {
    restarted_.push_back(spawn_serve({"-m", default_model(), "--host", "127.0.0.1", "--port", std::to_string(replica_port(i)),
                                      "--replica-id", std::to_string(i), "-t", "1", "--kv-cache-mem", "32"},
                                     (run_dir_ / ("replica" + std::to_string(i) + ".restarted.log")).string()));
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline) {
      if (get(replica_port(i), "/health").status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

 private:
  int port_ = 0;
  std::filesystem::path run_dir_;
  pid_t pid_ = -1;
  bool ready_ = false;
  std::vector<pid_t> restarted_;
};

json short_request(const std::string& prompt, int max_tokens = 4) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
}

// A prompt of about `bytes` bytes, different for each `seed` from its first word.
std::string passage(int seed, size_t bytes) {
  static const char* words[] = {"Lily", "Tom", "ball", "park", "tree", "sun", "dog", "cat", "happy", "red", "big", "play"};
  std::string out = "Story " + std::to_string(seed) + ":";
  for (uint64_t k = 0; out.size() < bytes; ++k) out += std::string(" ") + words[(k * 7 + static_cast<uint64_t>(seed) * 13 + k * k) % 12];
  return out;
}

// The load of the failure and drain tests: `clients` threads sending streams (even ones) and plain
// requests (odd ones) of their own sessions until `stop`.
struct Load {
  std::mutex mutex;
  std::vector<std::pair<std::string, Answer>> answers;  // (session, answer)
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;

  void start(int port, int clients, Clock::time_point epoch) {
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([this, port, c, epoch] {
        for (int n = 0; !stop; ++n) {
          const std::string session = "load-" + std::to_string(c) + "-" + std::to_string(n % 4);
          Answer a = complete(port, short_request(passage(c * 4 + n % 4, 80), 96), session, epoch, c % 2 == 0);
          std::lock_guard lock(mutex);
          answers.emplace_back(session, std::move(a));
        }
      });
  }
  void finish() {
    stop = true;
    for (std::thread& t : threads) t.join();
  }
};

TEST(Cluster, SessionsAndSharedPrefixesStayOnOneReplicaAndHitItsPrefixCache) {
  Cluster cluster;
  ASSERT_TRUE(cluster.ready()) << cluster.logs();
  const auto epoch = Clock::now();

  // 64 sessions by header, two requests each (different prompts): each session on one replica.
  std::map<std::string, int> sessions_per_replica;
  for (int s = 0; s < 64; ++s) {
    const std::string session = "session-" + std::to_string(s);
    const Answer first = complete(cluster.port(), short_request("Once upon a time"), session, epoch);
    const Answer second = complete(cluster.port(), short_request("Tom saw a dog " + std::to_string(s)), session, epoch);
    ASSERT_TRUE(first.ok && second.ok) << first.error << " / " << second.error;
    EXPECT_EQ(first.replica, second.replica) << session;
    ++sessions_per_replica[first.replica];
  }
  EXPECT_EQ(sessions_per_replica.size(), 3u) << "64 sessions should reach all three replicas";
  for (const auto& [replica, n] : sessions_per_replica) {
    EXPECT_TRUE(replica == "1" || replica == "2" || replica == "3") << replica;
    // The load bound of the configuration: hash-balance-factor 150 (% of the average).
    EXPECT_LE(n, 32) << "replica " << replica << " took " << n << " of 64 sessions";
    std::cout << "replica " << replica << ": " << n << " sessions\n";
  }

  // No header: prompts sharing their first 256 bytes go to one replica, whose prefix cache then
  // serves the shared part; the other replicas see none of them.
  double hits_before[4], queries_before[4];
  for (int i = 1; i <= 3; ++i) {
    hits_before[i] = scrape(cluster.replica_port(i), "vllm:prefix_cache_hits_total");
    queries_before[i] = scrape(cluster.replica_port(i), "vllm:prefix_cache_queries_total");
  }
  const std::string shared = passage(1000, 600);
  std::set<std::string> replicas;
  for (int turn = 0; turn < 6; ++turn) {
    const Answer a = complete(cluster.port(), short_request(shared + " and then " + std::to_string(turn)), "", epoch);
    ASSERT_TRUE(a.ok) << a.error;
    replicas.insert(a.replica);
  }
  ASSERT_EQ(replicas.size(), 1u) << "a shared prompt prefix should keep its requests on one replica";
  const int owner = std::stoi(*replicas.begin());
  const int64_t shared_tokens = static_cast<int64_t>(
      post_json(cluster.replica_port(owner), "/tokenize", {{"prompt", shared}}).json["count"].get<int64_t>());
  for (int i = 1; i <= 3; ++i) {
    const double hits = scrape(cluster.replica_port(i), "vllm:prefix_cache_hits_total") - hits_before[i];
    const double queries = scrape(cluster.replica_port(i), "vllm:prefix_cache_queries_total") - queries_before[i];
    if (i == owner) {
      // Turns 2..6 find the shared prefix's full blocks cached (16 tokens a block).
      EXPECT_GE(hits, 5.0 * static_cast<double>(shared_tokens / 16 * 16 - 16)) << "replica " << i;
      EXPECT_GE(queries, 6.0 * static_cast<double>(shared_tokens)) << "replica " << i;
    } else {
      EXPECT_EQ(hits, 0.0) << "replica " << i;
      EXPECT_EQ(queries, 0.0) << "replica " << i;
    }
  }
}

TEST(Cluster, AKilledReplicaMovesOnlyItsSessionsAndRejoinsAfterRestart) {
  Cluster cluster;
  ASSERT_TRUE(cluster.ready()) << cluster.logs();
  const auto epoch = Clock::now();
  // Where 48 sessions live before the failure.
  std::map<std::string, std::string> home;
  for (int s = 0; s < 48; ++s) {
    const std::string session = "user-" + std::to_string(s);
    const Answer a = complete(cluster.port(), short_request("Hello"), session, epoch);
    ASSERT_TRUE(a.ok) << a.error;
    home[session] = a.replica;
  }
  const std::string victim = home["user-0"];
  const int victim_id = std::stoi(victim);

  Load load;
  load.start(cluster.port(), 6, epoch);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const double killed_at = seconds_since(epoch);
  ASSERT_EQ(::kill(cluster.replica_pid(victim_id), SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  load.finish();

  // After the kill: the sessions of the survivors stay where they were, the victim's move.
  std::map<std::string, std::string> after;
  for (const auto& [session, replica] : home) {
    const Answer a = complete(cluster.port(), short_request("Hello again"), session, epoch);
    ASSERT_TRUE(a.ok) << session << ": " << a.error;
    after[session] = a.replica;
    if (replica == victim) {
      EXPECT_NE(a.replica, victim) << session;
    } else {
      EXPECT_EQ(a.replica, replica) << session << " moved although its replica is alive";
    }
  }
  // Under load: every request sent from ~1 s after the kill succeeded; the failures are requests
  // in flight on the victim, and they failed cleanly (an error at the client, no hang).
  int64_t total = 0, failed = 0, late_ok = 0;
  for (const auto& [session, a] : load.answers) {
    ++total;
    if (a.started > killed_at + 1.0) {
      EXPECT_TRUE(a.ok) << session << " sent " << a.started - killed_at << " s after the kill: " << a.error;
      late_ok += a.ok;
    }
    if (!a.ok) {
      ++failed;
      EXPECT_LT(a.started, killed_at + 1.0) << a.error;
      EXPECT_LT(a.ended - a.started, 25.0) << "a request hung";
    }
  }
  std::cout << total << " requests under load, " << failed << " failed (in flight on the killed replica), " << late_ok
            << " sent later all answered\n";
  EXPECT_GT(late_ok, 0);

  // Restarted, it takes its sessions back (consistent hashing: the same keys map to it again).
  ASSERT_TRUE(cluster.restart(victim_id)) << cluster.logs();
  const std::string moved_session = "user-0";
  bool rejoined = false;
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (!rejoined && Clock::now() < deadline) {
    const Answer a = complete(cluster.port(), short_request("Back"), moved_session, epoch);
    rejoined = a.ok && a.replica == victim;
    if (!rejoined) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(rejoined) << "replica " << victim << " did not get its sessions back after the restart";
}

TEST(Cluster, ASigtermedReplicaFinishesItsRequestsAndTakesNoNewOnes) {
  Cluster cluster;
  ASSERT_TRUE(cluster.ready()) << cluster.logs();
  const auto epoch = Clock::now();
  Load load;
  load.start(cluster.port(), 6, epoch);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int drained = 2;
  const pid_t pid = cluster.replica_pid(drained);
  const double term_at = seconds_since(epoch);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  load.finish();
  int64_t total = 0, on_drained_before = 0;
  for (const auto& [session, a] : load.answers) {
    ++total;
    EXPECT_TRUE(a.ok) << session << " (sent " << a.started - term_at << " s after SIGTERM): " << a.error;
    if (a.replica == std::to_string(drained)) {
      ++on_drained_before;
      EXPECT_LT(a.started, term_at + 0.3) << "the draining replica answered a request sent after SIGTERM";
    }
  }
  std::cout << total << " requests, all answered; " << on_drained_before << " by replica " << drained
            << " (all sent before its SIGTERM)\n";
  EXPECT_GT(on_drained_before, 0);
}

TEST(Cluster, VllmMetricsMatchTheEngineStats) {
  // In-process server: the vLLM-named series against EngineStats itself.
  server::ServerConfig config;
  config.served_model_name = "stories";
  TestServer server(default_model(), config);
  const std::string prompt = passage(7, 400);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(post_json(server.port(), "/v1/completions", short_request(prompt)).status, 200);
  const EngineStats stats = server.engine().stats();
  const std::string body = get(server.port(), "/metrics").body;
  auto value = [&](const std::string& series) {
    const std::string key = series + "{model_name=\"stories\"} ";
    const size_t at = body.find(key);
    EXPECT_NE(at, std::string::npos) << series;
    return at == std::string::npos ? NAN : std::stod(body.substr(at + key.size()));
  };
  EXPECT_EQ(value("vllm:num_requests_running"), static_cast<double>(stats.num_running));
  EXPECT_EQ(value("vllm:num_requests_waiting"), static_cast<double>(stats.num_waiting));
  EXPECT_DOUBLE_EQ(value("vllm:kv_cache_usage_perc"), stats.kv_usage());
  EXPECT_DOUBLE_EQ(value("vllm:gpu_cache_usage_perc"), stats.kv_usage());
  EXPECT_EQ(value("vllm:prefix_cache_queries_total"), static_cast<double>(stats.prefix_query_tokens));
  EXPECT_EQ(value("vllm:prefix_cache_hits_total"), static_cast<double>(stats.prefix_cached_tokens));
  EXPECT_EQ(value("vllm:gpu_prefix_cache_queries_total"), static_cast<double>(stats.prefix_query_tokens));
  EXPECT_EQ(value("vllm:gpu_prefix_cache_hits_total"), static_cast<double>(stats.prefix_cached_tokens));
  // Three requests of one prompt: queries are their three lengths, hits the second and third's
  // full cached blocks.
  const int64_t n = post_json(server.port(), "/tokenize", {{"prompt", prompt}}).json["count"].get<int64_t>();
  EXPECT_EQ(stats.prefix_query_tokens, 3 * n);
  EXPECT_EQ(stats.prefix_cached_tokens, 2 * ((n - 1) / 16 * 16));
  EXPECT_NE(body.find("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"" + std::to_string(stats.kv_blocks_total) +
                      "\"} 1\n"),
            std::string::npos);
}

TEST(Cluster, ReplicaIdIsSentOnEveryResponse) {
  server::ServerConfig config;
  config.replica_id = "r7";
  TestServer server(default_model(), config);
  httplib::Client client("127.0.0.1", server.port());
  for (const char* path : {"/health", "/v1/models", "/metrics", "/no-such-route"}) {
    auto r = client.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->get_header_value("x-nucleus-replica"), "r7") << path;
  }
  auto r = client.Post("/v1/completions", short_request("Once").dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("x-nucleus-replica"), "r7");
}

}  // namespace
}  // namespace nucleus::test
