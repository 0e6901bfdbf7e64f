// Load: 64 concurrent streaming clients with mixed prompt and output lengths on stories260K. One in
// five hangs up mid-stream; every other stream must equal the same request answered alone
// (non-streaming, before the load), and afterwards the KV pool must be entirely free again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server_test_harness.h"

namespace nucleus::test {
namespace {

using nlohmann::json;

TEST(ServerLoadTest, SixtyFourStreamsWithDisconnectsAllCorrectAndPoolReturnsToFull) {
  NUCLEUS_REQUIRE_SHARED();
  server::ServerConfig config;
  config.max_num_seqs = 64;
  EngineConfig engine_config;
  engine_config.max_num_seqs = 64;
  engine_config.n_threads = 2;
  TestServer server(shared_path("models/stories260K.gguf"), config, engine_config);
  const int port = server.port();

  const std::vector<std::string> openings = {
      "Once upon a time", "Lily and Tom went to the park. They saw a big dog and", "The sun was hot.",
      "One day, a little bird named Blue wanted to fly over the tall mountain, but the wind was strong and the",
      "Ben had a red ball"};
  constexpr int kClients = 64;
  std::vector<json> bodies(kClients);
  std::vector<bool> hang_up(kClients);
  for (int i = 0; i < kClients; ++i) {
    hang_up[i] = i % 5 == 0;  // 13 of 64 ≈ 20%
    const int max_tokens = hang_up[i] ? 400 : 8 + (i * 37) % 150;
    bodies[i] = {{"prompt", openings[static_cast<size_t>(i) % openings.size()]}, {"max_tokens", max_tokens},
                 {"temperature", 0.8}, {"top_p", 0.95}, {"seed", 1000 + i}, {"ignore_eos", hang_up[i]}};
  }
  // The answers when each request runs alone.
  std::vector<json> expected(kClients);
  for (int i = 0; i < kClients; ++i) {
    if (hang_up[i]) continue;
    const HttpResult r = post_json(port, "/v1/completions", bodies[i]);
    ASSERT_EQ(r.status, 200) << r.body;
    expected[i] = r.json["choices"][0];
  }

  std::vector<StreamResult> streams(kClients);
  std::vector<std::thread> clients;
  std::atomic<int> ready{0};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kClients) std::this_thread::yield();  // start together
      streams[i] = post_stream(port, "/v1/completions", bodies[i], hang_up[i] ? 3 : -1);
    });
  }
  for (std::thread& t : clients) t.join();

  int hung_up = 0;
  for (int i = 0; i < kClients; ++i) {
    if (hang_up[i]) {
      EXPECT_TRUE(streams[i].hung_up) << i;
      EXPECT_FALSE(streams[i].done) << i;
      ++hung_up;
      continue;
    }
    EXPECT_EQ(streams[i].status, 200) << i << " " << streams[i].client_error;
    EXPECT_TRUE(streams[i].done) << i;
    EXPECT_EQ(stream_text(streams[i]), expected[i]["text"].get<std::string>()) << "client " << i;
    ASSERT_FALSE(streams[i].chunks.empty()) << i;
    EXPECT_EQ(streams[i].chunks.back()["choices"][0]["finish_reason"], expected[i]["finish_reason"]) << i;
  }
  EXPECT_EQ(hung_up, 13);

  // The disconnected requests were aborted (not run to 400 tokens) and every block is back.
  std::string metrics;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    metrics = get(port, "/metrics").body;
    if (metric_value(metrics, "nucleus_kv_cache_blocks_used") == 0 && metric_value(metrics, "nucleus_num_requests_running") == 0 &&
        server.http().sequences_in_flight() == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(metric_value(metrics, "nucleus_kv_cache_blocks_used"), 0) << metrics;
  EXPECT_EQ(metric_value(metrics, "nucleus_kv_cache_usage_perc"), 0);
  EXPECT_EQ(metric_value(metrics, "nucleus_num_requests_running"), 0);
  EXPECT_EQ(metric_value(metrics, "nucleus_num_requests_waiting"), 0);
  EXPECT_EQ(metric_value(metrics, "nucleus_request_success_total{finished_reason=\"abort\"}"), 13) << metrics;
  EXPECT_EQ(server.http().sequences_in_flight(), 0);
  const double errors = metric_value(metrics, "nucleus_request_success_total{finished_reason=\"error\"}");
  EXPECT_EQ(errors, 0);
  // Still healthy.
  EXPECT_EQ(get(port, "/health").status, 200);
}

}  // namespace
}  // namespace nucleus::test
