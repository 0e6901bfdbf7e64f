// Faults injected under load (issue 22): slow clients, a KV pool that runs out mid-generation, bodies
// over the limit sent chunked, SIGTERM with many streams in flight, SIGKILL and a restart on the same
// port, and many client hang-ups. After each fault the server must still answer a normal request,
// every KV block must be back in the pool, and no thread or file descriptor may have leaked (counted
// against a baseline taken after a warm-up request, since httplib's pool, the engine loop and OpenMP
// start threads of their own).
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "process_helpers.h"
#include "server_test_harness.h"

namespace nucleus::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

#if defined(NUCLEUS_SANITIZED) || defined(NUCLEUS_TSAN)
constexpr int kScale = 4;  // the sanitized builds run fewer / shorter faults
#else
constexpr int kScale = 1;
#endif

// Entries of a /proc directory (threads: /proc/self/task, descriptors: /proc/self/fd); -1 if unreadable.
int count_entries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - (dir == "/proc/self/fd" ? 1 : 0);  // opendir's own descriptor
}

// Polls `done` until it holds or `seconds` pass; its last answer.
bool eventually(double seconds, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A loopback TCP connection; rcvbuf > 0 sets SO_RCVBUF before connecting (so the window stays small).
int connect_loopback(int port, int rcvbuf = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Reads until the peer closes (true) or `seconds` pass (false); what arrived goes to `out`.
bool read_until_closed(int fd, double seconds, std::string* out = nullptr) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  char buffer[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (::poll(&p, 1, std::max(left, 1)) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return true;  // EOF or reset: closed
    if (out) out->append(buffer, static_cast<size_t>(n));
  }
  return false;
}

// Reads 256 bytes at a time until `marker` has arrived, the peer closes, or `seconds` pass, waiting
// `pause` after each read (a slow reader); what arrived.
std::string read_until_seen(int fd, const std::string& marker, double seconds,
                            std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  std::string got;
  const auto start = Clock::now();
  char chunk[256];
  while (got.find(marker) == std::string::npos && seconds_since(start) < seconds) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 500) <= 0) continue;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    got.append(chunk, static_cast<size_t>(n));
    std::this_thread::sleep_for(pause);
  }
  return got;
}

std::string completion_request(const json& body) {
  const std::string text = body.dump();
  return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(text.size()) + "\r\n\r\n" + text;
}

// Threads and descriptors of this process once the server has answered one request (its pools,
// engine loop and OpenMP team all started).
struct Baseline {
  int threads = 0;
  int fds = 0;
};

const json kNormal = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}};

Baseline warm_up(TestServer& server) {
  const HttpResult r = post_json(server.port(), "/v1/completions", kNormal);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(post_stream(server.port(), "/v1/completions", kNormal).done, true);
  Baseline b;
  // The warm-up's connections close asynchronously on the server side: settle first.
  int last = -1;
  eventually(5, [&] {
    const int now = count_entries("/proc/self/fd");
    const bool stable = now == last;
    last = now;
    return stable;
  });
  b.threads = count_entries("/proc/self/task");
  b.fds = count_entries("/proc/self/fd");
  return b;
}

// After a fault: no sequence left in flight, every KV block free, a normal request served, and the
// thread and descriptor counts back to the warm-up baseline (the server closes connections of
// clients that went away within its read/keep-alive timeout, 5 s in httplib 0.11).
void expect_recovered(TestServer& server, const Baseline& baseline, const std::string& what) {
  SCOPED_TRACE(what);
  std::string metrics;
  EXPECT_TRUE(eventually(20, [&] {
    metrics = get(server.port(), "/metrics").body;
    return server.http().sequences_in_flight() == 0 && metric_value(metrics, "nucleus_kv_cache_blocks_used") == 0 &&
           metric_value(metrics, "nucleus_num_requests_running") == 0 && metric_value(metrics, "nucleus_num_requests_waiting") == 0;
  })) << metrics;
  EXPECT_GT(metric_value(metrics, "nucleus_kv_cache_blocks_total"), 0);
  const EngineStats stats = server.engine().stats();
  EXPECT_EQ(stats.kv_blocks_used, 0);
  const HttpResult ok = post_json(server.port(), "/v1/completions", kNormal);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json["usage"]["completion_tokens"], 8) << ok.body;
  int threads = 0, fds = 0;
  EXPECT_TRUE(eventually(20, [&] {
    threads = count_entries("/proc/self/task");
    fds = count_entries("/proc/self/fd");
    return threads <= baseline.threads && fds <= baseline.fds;
  })) << "threads " << threads << " (baseline " << baseline.threads << "), fds " << fds << " (baseline " << baseline.fds << ")";
}

// 1a. Slowloris: connections that send part of a request a byte at a time and then go quiet hold
// one httplib worker each, but neither delay other clients nor stay open for long. httplib 0.11's
// defaults bound them: after the read timeout (CPPHTTPLIB_READ_TIMEOUT_SECOND, 5 s) the unfinished
// headers get a 400, and after the keep-alive timeout (5 s more) the connection is closed: ~10 s in
// all. (A client that keeps trickling a byte every < 5 s meets the request deadline: 1a'.)
TEST(ServerFaults, SlowlorisConnectionsDoNotDelayOthersAndAreClosedAfterTheReadTimeout) {
  NUCLEUS_REQUIRE_SHARED();
  TestServer server(shared_path("models/stories260K.gguf"));
  const Baseline baseline = warm_up(server);

  constexpr int kSlow = 8;
  const std::string partial = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty";
  std::vector<int> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(connect_loopback(server.port()));
    ASSERT_GE(slow.back(), 0);
  }
  // A byte at a time, round-robin, 10 ms apart (~0.6 s), then silence.
  for (size_t k = 0; k < partial.size(); ++k) {
    for (int fd : slow) ASSERT_TRUE(send_all(fd, partial.substr(k, 1)));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const Clock::time_point last_byte = Clock::now();

  // Meanwhile (the slow sockets now quiet) a normal request is answered at once.
  const auto start = Clock::now();
  const HttpResult ok = post_json(server.port(), "/v1/completions", kNormal);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_LT(seconds_since(start), 3.0) << "a normal request waited behind the slow connections";

  // The server answers each slow socket 400 (or nothing) and hangs up: read + keep-alive timeout.
  for (int fd : slow) {
    std::string got;
    EXPECT_TRUE(read_until_closed(fd, 20, &got)) << "a slow connection was never closed";
    EXPECT_TRUE(got.empty() || got.rfind("HTTP/1.1 400", 0) == 0) << got;
    ::close(fd);
  }
  const double closed_after = seconds_since(last_byte);
  EXPECT_GT(closed_after, 4.0) << "closed before the read timeout?";
  EXPECT_LT(closed_after, 15.0);
  expect_recovered(server, baseline, "after slowloris");
}

// 1a'. Slowloris that never goes quiet: a client that keeps trickling a byte every 400 ms (well
// inside httplib's 5 s read timeout) is still cut off once its request has taken longer than the
// request deadline (ServerConfig::request_read_seconds, here 2 s) — in the headers, or in the body
// of a generation route. The deadline covers reading only: a response that takes longer to write
// than the deadline (a slowly read stream) is not cut, and a keep-alive connection gets a fresh
// deadline for each request.
TEST(ServerFaults, ATricklingClientIsCutOffAtTheRequestDeadlineButASlowResponseIsNot) {
  NUCLEUS_REQUIRE_SHARED();
  server::ServerConfig config;
  config.request_read_seconds = 2.0;
  TestServer server(shared_path("models/stories260K.gguf"), config);
  const Baseline baseline = warm_up(server);

  const std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", 4}}.dump();
  const std::string headers = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "X-Padding: " + std::string(64, 'x') + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  struct Trickle {
    std::string sent_first;  // sent at once
    std::string trickled;    // then a byte every 400 ms
  };
  const std::vector<Trickle> trickles = {{"", headers + body}, {headers, body}};  // in the headers; in the body
  std::vector<int> fds;
  for (size_t i = 0; i < trickles.size(); ++i) {
    fds.push_back(connect_loopback(server.port()));
    ASSERT_GE(fds.back(), 0);
    ASSERT_TRUE(send_all(fds.back(), trickles[i].sent_first));
  }
  const auto start = Clock::now();
  std::vector<double> cut_after(fds.size(), -1.0);
  std::vector<std::string> got(fds.size());
  for (size_t k = 0; seconds_since(start) < 12.0; ++k) {
    bool all_cut = true;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (cut_after[i] >= 0) continue;
      all_cut = false;
      const std::string& rest = trickles[i].trickled;
      if (k < rest.size() && !send_all(fds[i], rest.substr(k, 1))) cut_after[i] = seconds_since(start);
      pollfd p{fds[i], POLLIN, 0};
      if (cut_after[i] < 0 && ::poll(&p, 1, 0) > 0 && read_until_closed(fds[i], 1.0, &got[i])) cut_after[i] = seconds_since(start);
    }
    if (all_cut) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    // 12 s of trickling would have sent 30 bytes: neither request was complete when it was cut.
    EXPECT_GE(cut_after[i], 1.5) << "trickle " << i << " cut before the deadline";
    EXPECT_LE(cut_after[i], 5.0) << "trickle " << i << " was not cut at the 2 s deadline (-1: never)";
    EXPECT_EQ(got[i].find("HTTP/1.1 200"), std::string::npos) << got[i];
    ::close(fds[i]);
  }

  // A stream read slowly (a small receive window, 256 bytes every 30 ms) takes longer to write
  // than the 2 s deadline and still arrives whole.
  const int fd = connect_loopback(server.port(), 2048);
  ASSERT_GE(fd, 0);
  const json streamed = {{"prompt", "Once upon a time"}, {"max_tokens", 100}, {"stream", true}, {"logprobs", 2},
                         {"ignore_eos", true}};
  ASSERT_TRUE(send_all(fd, completion_request(streamed)));
  const auto stream_start = Clock::now();
  const std::string stream = read_until_seen(fd, "data: [DONE]", 60.0, std::chrono::milliseconds(30));
  EXPECT_NE(stream.find("data: [DONE]"), std::string::npos) << "the slowly read stream was cut";
  EXPECT_GT(seconds_since(stream_start), 2.5) << "the stream did not outlast the request deadline: the test proves nothing";
  ::close(fd);

  // Three requests on one keep-alive connection, 1.5 s apart: 3 s in all, past the 2 s deadline,
  // but each request has one of its own.
  const int kept = connect_loopback(server.port());
  ASSERT_GE(kept, 0);
  for (int i = 0; i < 3; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ASSERT_TRUE(send_all(kept, completion_request(json{{"prompt", "Hello"}, {"max_tokens", 2}}))) << "request " << i;
    const std::string answer = read_until_seen(kept, "\"usage\"", 10.0);
    EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << "request " << i << " on the kept-alive connection: " << answer;
  }
  ::close(kept);
  expect_recovered(server, baseline, "after trickling clients");
}

// 1b. A slow reader: a client that asks for a long stream with several choices and logprobs (MBs of
// SSE) behind a tiny receive window and never reads. Its handler blocks in send(); other streams
// must still run to the end promptly, and once the stuck client closes (or the server's write
// timeout drops it) its sequences are aborted and the pool is whole.
TEST(ServerFaults, AReaderThatStopsReadingDoesNotStallOtherStreams) {
  NUCLEUS_REQUIRE_SHARED();
  TestServer server(shared_path("models/stories260K.gguf"));
  const Baseline baseline = warm_up(server);

  const int stuck = connect_loopback(server.port(), 1024);
  ASSERT_GE(stuck, 0);
  ASSERT_TRUE(send_all(stuck, completion_request({{"prompt", "Once"}, {"max_tokens", 500}, {"n", 8}, {"logprobs", 5},
                                                  {"temperature", 1.0}, {"ignore_eos", true}, {"stream", true}})));
  // The stuck stream is under way (its sequences hold blocks).
  ASSERT_TRUE(eventually(10, [&] { return server.http().sequences_in_flight() == 8; }));

  // Four ordinary streams, concurrently, each to its end.
  constexpr int kOthers = 4;
  std::vector<StreamResult> others(kOthers);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int i = 0; i < kOthers; ++i)
    threads.emplace_back([&, i] {
      others[i] = post_stream(server.port(), "/v1/completions",
                              {{"prompt", "Lily went"}, {"max_tokens", 40}, {"temperature", 0}, {"ignore_eos", true}});
    });
  for (std::thread& t : threads) t.join();
  const double others_seconds = seconds_since(start);
  for (int i = 0; i < kOthers; ++i) {
    EXPECT_TRUE(others[i].done) << i << " " << others[i].client_error;
    ASSERT_FALSE(others[i].chunks.empty()) << i;
    EXPECT_EQ(others[i].chunks.back()["choices"][0]["finish_reason"], "length") << i;
  }
  EXPECT_LT(others_seconds, 10.0) << "other streams were held up by the stuck reader";
  // The stuck stream is still stuck (its output does not fit the socket buffers): the handler is
  // blocked writing, its generation not yet released — unless the others took so long (a loaded
  // machine) that httplib's 5 s write timeout has already dropped it, which is fine too.
  if (others_seconds < 4.0) {
    EXPECT_GT(server.http().sequences_in_flight(), 0) << "the slow reader's stream was not blocked: make it longer";
  }

  // The client gives up: everything it held is released.
  ::close(stuck);
  expect_recovered(server, baseline, "after the slow reader closed");
}

// 2. The KV pool runs out mid-generation: 12 concurrent greedy requests of 120 tokens each need ~96
// blocks of 16 tokens, the pool has 24. The scheduler must preempt (and later recompute) rather than
// fail or hang: every request completes with all 120 tokens and exactly the text it gets alone.
// A request that cannot fit even alone: a prompt over the pool's capacity is a clear 400; a prompt
// that fits but whose max_tokens would not is cut to the capacity (finish_reason "length").
TEST(ServerFaults, KvPoolExhaustedMidGenerationPreemptsAndEveryRequestCompletes) {
  NUCLEUS_REQUIRE_SHARED();
  EngineConfig engine_config;
  engine_config.num_blocks = 24;  // 24 x 16 = 384 tokens, under stories260K's 512 context
  engine_config.max_num_seqs = 16;
  engine_config.n_threads = 1;
  TestServer server(shared_path("models/stories260K.gguf"), {}, engine_config);
  const Baseline baseline = warm_up(server);
  const int64_t capacity = server.engine().stats().kv_blocks_total * server.engine().stats().kv_block_size;
  ASSERT_EQ(capacity, 384);

  constexpr int kRequests = 12;
  const int max_tokens = 120 / kScale;
  const std::vector<std::string> openings = {"Once upon a time", "Lily and Tom", "The sun was hot.", "Ben had a red ball"};
  std::vector<json> bodies;
  for (int i = 0; i < kRequests; ++i)
    bodies.push_back({{"prompt", openings[static_cast<size_t>(i) % openings.size()]}, {"max_tokens", max_tokens},
                      {"temperature", 0}, {"ignore_eos", true}});
  std::vector<std::string> alone(openings.size());
  for (size_t k = 0; k < openings.size(); ++k) {
    const HttpResult r = post_json(server.port(), "/v1/completions", bodies[k]);
    ASSERT_EQ(r.status, 200) << r.body;
    alone[k] = r.json["choices"][0]["text"];
  }
  const int64_t preemptions_before = server.engine().stats().preemptions;

  std::vector<HttpResult> results(kRequests);
  std::vector<StreamResult> streams(kRequests);
  std::vector<std::thread> clients;
  std::atomic<int> ready{0};
  for (int i = 0; i < kRequests; ++i)
    clients.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kRequests) std::this_thread::yield();
      if (i % 2 == 0) {
        results[i] = post_json(server.port(), "/v1/completions", bodies[i]);
      } else {
        json body = bodies[i];
        body["stream_options"] = {{"include_usage", true}};
        streams[i] = post_stream(server.port(), "/v1/completions", body);
      }
    });
  for (std::thread& t : clients) t.join();  // bounded: the harness client's read timeout is 60 s

  for (int i = 0; i < kRequests; ++i) {
    const std::string& expected = alone[static_cast<size_t>(i) % openings.size()];
    if (i % 2 == 0) {
      ASSERT_EQ(results[i].status, 200) << i << " " << results[i].body;
      EXPECT_EQ(results[i].json["usage"]["completion_tokens"], max_tokens) << i;
      EXPECT_EQ(results[i].json["choices"][0]["finish_reason"], "length") << i;
      EXPECT_EQ(results[i].json["choices"][0]["text"], expected) << "request " << i << " differs from its run alone";
    } else {
      ASSERT_TRUE(streams[i].done) << i << " " << streams[i].client_error;
      ASSERT_GE(streams[i].chunks.size(), 2u) << i;
      EXPECT_EQ(streams[i].chunks.back()["usage"]["completion_tokens"], max_tokens) << i;
      EXPECT_EQ(streams[i].chunks[streams[i].chunks.size() - 2]["choices"][0]["finish_reason"], "length") << i;
      EXPECT_EQ(stream_text(streams[i]), expected) << "stream " << i << " differs from its run alone";
    }
  }
  EXPECT_GT(server.engine().stats().preemptions, preemptions_before) << "the pool never ran out: the test lost its point";

  // Cannot fit even alone: a prompt of 400 token ids in a 384-token pool.
  std::vector<int> too_long(400, 100);
  too_long[0] = 1;
  const HttpResult refused = post_json(server.port(), "/v1/completions", {{"prompt", too_long}, {"max_tokens", 4}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("KV cache holds only"), std::string::npos) << refused.body;
  // Fits, but not with its max_tokens: cut to what the pool holds.
  std::vector<int> long_prompt(300, 100);
  long_prompt[0] = 1;
  const HttpResult cut = post_json(server.port(), "/v1/completions",
                                   {{"prompt", long_prompt}, {"max_tokens", 200}, {"temperature", 0}, {"ignore_eos", true}});
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(cut.json["usage"]["completion_tokens"], capacity - 300) << cut.body;
  EXPECT_EQ(cut.json["choices"][0]["finish_reason"], "length");
  expect_recovered(server, baseline, "after the pool ran out");
}

// 3. Bodies over max_body_bytes sent with Transfer-Encoding: chunked (no Content-Length to refuse up
// front; the Content-Length case is in server_errors_test.cpp) get 413 too, and the same body under
// the limit is served: chunked uploads work, only their size is capped.
TEST(ServerFaults, ChunkedBodyOverTheLimitGets413) {
  NUCLEUS_REQUIRE_SHARED();
  server::ServerConfig config;
  config.max_body_bytes = 64 << 10;
  TestServer server(shared_path("models/stories260K.gguf"), config);
  const Baseline baseline = warm_up(server);

  // The JSON body {"prompt": "a a a ...", "max_tokens": 2} of about `size` bytes, in 4 KiB chunks.
  auto chunked_exchange = [&](size_t size, std::string* response) {
    std::string body = R"({"max_tokens": 2, "prompt": ")";
    while (body.size() + 2 < size) body += "a ";
    body += "\"}";
    std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    for (size_t at = 0; at < body.size(); at += 4096) {
      const std::string piece = body.substr(at, 4096);
      char length[16];
      std::snprintf(length, sizeof length, "%zx\r\n", piece.size());
      request += length + piece + "\r\n";
    }
    request += "0\r\n\r\n";
    const int fd = connect_loopback(server.port());
    if (fd < 0) return 0;
    send_all(fd, request);  // the server may answer and close before reading everything
    read_until_closed(fd, 30, response);
    ::close(fd);
    if (response->rfind("HTTP/1.1 ", 0) != 0 || response->size() < 12) return 0;
    return std::stoi(response->substr(9, 3));
  };
  std::string response;
  EXPECT_EQ(chunked_exchange(2 << 20, &response), 413) << response.substr(0, 400);
  EXPECT_NE(response.find("\"error\""), std::string::npos) << response.substr(0, 400);
  EXPECT_NE(response.find("exceeds the limit"), std::string::npos) << response.substr(0, 400);
  EXPECT_EQ(chunked_exchange((64 << 10) + 1, &response), 413) << response.substr(0, 400);
  response.clear();
  EXPECT_EQ(chunked_exchange(1000, &response), 200) << response.substr(0, 400);  // short prompt: fits the context
  expect_recovered(server, baseline, "after the oversized chunked bodies");
}

// The faults on a spawned `nucleus serve` process. Not in the TSan build: it builds no nucleus_cli,
// and the server process would not be instrumented anyway (its threads are checked in-process above).
#ifndef NUCLEUS_TSAN

// `nucleus serve` on `port` with the flags every spawned server here shares; waits for /health.
pid_t start_serve(int port, const std::string& log, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"-m", shared_path("models/stories260K.gguf"), "--port", std::to_string(port), "-t", "1",
                                   "--kv-cache-mem", "16", "--served-model-name", "stories", "--speed-model", "served"};
  args.insert(args.end(), extra.begin(), extra.end());
  const pid_t pid = spawn_serve(args, log);
  const bool up = eventually(30, [&] { return get(port, "/health").status == 200; });
  EXPECT_TRUE(up) << read_file(log);
  return pid;
}

// 4a. SIGTERM while 32 streams run: every one of them still finishes — all its tokens, its
// finish_reason and [DONE] — within --shutdown-timeout, and the process exits 0.
TEST(ServerFaults, SigtermWith32StreamsInFlightFinishesEveryStreamAndExitsZero) {
  NUCLEUS_REQUIRE_SHARED();
  const int port = free_port();
  const std::string log = "/tmp/nucleus-faults-sigterm-" + std::to_string(::getpid()) + ".log";
  const pid_t pid = start_serve(port, log, {"--shutdown-timeout", "60"});
  if (HasFailure()) return (void)wait_exit(pid, 0);

  constexpr int kStreams = 32;
  const int max_tokens = 240 / kScale;
  std::vector<StreamResult> streams(kStreams);
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i)
    clients.emplace_back([&, i] {
      streams[i] = post_stream(port, "/v1/completions",
                               {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0.8}, {"seed", i},
                                {"ignore_eos", true}, {"stream_options", {{"include_usage", true}}}});
    });
  // All 32 admitted and running (none finished yet: each needs max_tokens steps).
  std::string metrics;
  const bool under_way = eventually(30, [&] {
    metrics = get(port, "/metrics").body;
    return metric_value(metrics, "nucleus_num_requests_running") == kStreams;
  });
  EXPECT_TRUE(under_way) << metrics;
  const auto signalled = Clock::now();
  ::kill(pid, SIGTERM);
  for (std::thread& t : clients) t.join();
  const int exit_code = wait_exit(pid, 60);
  const double shutdown_seconds = seconds_since(signalled);
  EXPECT_EQ(exit_code, 0) << read_file(log);
  EXPECT_LT(shutdown_seconds, 60);
  for (int i = 0; i < kStreams; ++i) {
    EXPECT_EQ(streams[i].status, 200) << i;
    EXPECT_TRUE(streams[i].done) << "stream " << i << " was cut: " << streams[i].client_error;
    ASSERT_GE(streams[i].chunks.size(), 2u) << i;
    EXPECT_EQ(streams[i].chunks.back()["usage"]["completion_tokens"], max_tokens) << i;
    EXPECT_EQ(streams[i].chunks[streams[i].chunks.size() - 2]["choices"][0]["finish_reason"], "length") << i;
  }
  EXPECT_EQ(get(port, "/health").status, 0);  // the listener is gone
  ::unlink(log.c_str());
}

// 4b. kill -9 mid-stream, then a new server on the same port: it binds at once (SO_REUSEADDR: the
// dead server's connections in TIME_WAIT do not block the port), loads and serves. The dead
// server's client sees a cut stream, not a hang.
TEST(ServerFaults, SigkillMidStreamThenARestartOnTheSamePortBindsAndServes) {
  NUCLEUS_REQUIRE_SHARED();
  const int port = free_port();
  const std::string log = "/tmp/nucleus-faults-sigkill-" + std::to_string(::getpid()) + ".log";
  const pid_t first = start_serve(port, log);
  if (HasFailure()) return (void)wait_exit(first, 0);

  StreamResult cut;
  std::thread client([&] {
    cut = post_stream(port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 500}, {"temperature", 0}, {"ignore_eos", true}});
  });
  EXPECT_TRUE(eventually(30, [&] { return metric_value(get(port, "/metrics").body, "nucleus_generation_tokens_total") > 0; }));
  ::kill(first, SIGKILL);
  EXPECT_EQ(wait_exit(first, 10), 128 + SIGKILL);
  client.join();
  EXPECT_FALSE(cut.done) << "the stream of a killed server cannot have finished";

  const std::string log2 = log + ".2";
  const pid_t second = start_serve(port, log2);
  EXPECT_EQ(read_file(log2).find("cannot bind"), std::string::npos) << read_file(log2);
  const HttpResult ok = post_json(port, "/v1/completions", kNormal);
  EXPECT_EQ(ok.status, 200) << ok.body << read_file(log2);
  const StreamResult stream = post_stream(port, "/v1/completions", kNormal);
  EXPECT_TRUE(stream.done);

  // The new server's own descriptors and threads: a burst of hung-up streams leaves none behind.
  const std::string proc = "/proc/" + std::to_string(second);
  const int fds = count_entries(proc + "/fd");
  const int threads = count_entries(proc + "/task");
  std::vector<std::thread> hang_ups;
  for (int i = 0; i < 8; ++i)
    hang_ups.emplace_back([&, i] {
      post_stream(port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 300}, {"ignore_eos", true}}, 1 + i);
    });
  for (std::thread& t : hang_ups) t.join();
  int fds_after = 0, threads_after = 0;
  EXPECT_TRUE(eventually(20, [&] {
    fds_after = count_entries(proc + "/fd");
    threads_after = count_entries(proc + "/task");
    const std::string metrics = get(port, "/metrics").body;
    return fds_after <= fds + 1 && threads_after <= threads && metric_value(metrics, "nucleus_kv_cache_blocks_used") == 0;
  })) << "fds " << fds_after << " (was " << fds << "), threads " << threads_after << " (was " << threads << ")";
  ::kill(second, SIGTERM);
  EXPECT_EQ(wait_exit(second, 30), 0) << read_file(log2);
  ::unlink(log.c_str());
  ::unlink(log2.c_str());
}

#endif  // NUCLEUS_TSAN

// 5. Fifty requests abandoned at random points — streams hung up after a random number of events,
// raw requests closed before, while or after the body is sent, non-streaming requests dropped before
// their answer — in waves of ten; afterwards no thread, descriptor, sequence or KV block is left.
TEST(ServerFaults, FiftyRandomHangUpsLeaveNoThreadDescriptorOrBlockBehind) {
  NUCLEUS_REQUIRE_SHARED();
  TestServer server(shared_path("models/stories260K.gguf"));
  const Baseline baseline = warm_up(server);
  const int total = 50 / kScale;
  std::mt19937 rng(22);
  std::vector<int> kinds(static_cast<size_t>(total)), points(static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) {
    kinds[i] = static_cast<int>(rng() % 4);
    points[i] = static_cast<int>(rng() % 40);
  }
  std::atomic<int> hung_up{0};
  for (int wave = 0; wave < total; wave += 10) {
    std::vector<std::thread> clients;
    for (int i = wave; i < std::min(total, wave + 10); ++i)
      clients.emplace_back([&, i] {
        const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"temperature", 0.9}, {"seed", i}, {"ignore_eos", true}};
        if (kinds[i] == 0) {  // a stream, hung up after `point` events
          const StreamResult s = post_stream(server.port(), "/v1/completions", body, points[i]);
          if (s.hung_up) ++hung_up;
          return;
        }
        json raw_body = body;
        if (kinds[i] != 1) raw_body["stream"] = true;
        std::string request = completion_request(raw_body);
        const int fd = connect_loopback(server.port());
        if (fd < 0) return;
        if (kinds[i] == 2) {
          request.resize(static_cast<size_t>(points[i]) * request.size() / 40);  // part of the request, then gone
        }
        send_all(fd, request);
        if (kinds[i] != 2) std::this_thread::sleep_for(std::chrono::milliseconds(points[i] * 5));  // mid-generation
        ::close(fd);
        ++hung_up;
      });
    for (std::thread& t : clients) t.join();
  }
  EXPECT_GE(hung_up.load(), total * 3 / 4);
  expect_recovered(server, baseline, "after the hang-ups");
}

}  // namespace
}  // namespace nucleus::test
