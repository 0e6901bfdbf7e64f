// The server as the `curl` binary speaks to it (its own HTTP/1.1 client, chunked transfer decoding,
// `-N` streaming): completions, chat, streaming, n = 2, logprobs, stop strings, seed reproducibility,
// tokenize/detokenize, models, health and metrics. Fails (never skips) when curl is missing.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "server_test_harness.h"

namespace nucleus::test {
namespace {

using nlohmann::json;

struct CurlResult {
  int exit_code = -1;
  int status = 0;
  std::string body;
  json parsed;  // null when the body is not JSON
};

bool curl_available() { return std::system("curl --version >/dev/null 2>&1") == 0; }

// Runs `curl -sS -X METHOD http://127.0.0.1:PORT/PATH [-d @body] EXTRA`; the status code comes
// from -w on the last line of the output.
CurlResult curl(int port, const std::string& method, const std::string& path, const json& body = nullptr,
                const std::string& extra = "") {
  std::string command = "curl -sS -X " + method + " -w '\\n%{http_code}' " + extra;
  std::string body_path;
  if (!body.is_null()) {
    char name[] = "/tmp/nucleus-curl-body-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    ::close(fd);
    body_path = name;
    std::ofstream(body_path) << body.dump();
    command += " -H 'Content-Type: application/json' --data-binary @" + body_path;
  }
  command += " 'http://127.0.0.1:" + std::to_string(port) + path + "'";
  const CommandResult run = run_shell(command);
  if (!body_path.empty()) std::remove(body_path.c_str());
  CurlResult result;
  result.exit_code = run.exit_code;
  result.body = run.out;
  const size_t last_line = result.body.rfind('\n');
  if (last_line != std::string::npos) {
    result.status = std::atoi(result.body.c_str() + last_line + 1);
    result.body.resize(last_line);
  }
  result.parsed = json::parse(result.body, nullptr, false);
  if (result.parsed.is_discarded()) result.parsed = nullptr;
  return result;
}

// The "data: {...}" events of an SSE body; *done is set when "data: [DONE]" ended it.
std::vector<json> sse_events(const std::string& body, bool* done) {
  std::vector<json> events;
  *done = false;
  size_t start = 0, end;
  while ((end = body.find("\n\n", start)) != std::string::npos) {
    const std::string event = body.substr(start, end - start);
    start = end + 2;
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    EXPECT_FALSE(*done) << "an event after [DONE]: " << event;
    if (event == "data: [DONE]") {
      *done = true;
    } else {
      events.push_back(json::parse(event.substr(6)));
    }
  }
  EXPECT_EQ(start, body.size()) << "trailing bytes after the last event";
  return events;
}

class ServerCurlTest : public TwoServersTest<ServerCurlTest> {
 public:
  static server::ServerConfig config() {  // read by TwoServersTest
    server::ServerConfig config;
    config.api_key = "curl-key";
    return config;
  }

 protected:
  void SetUp() override {
    ASSERT_TRUE(curl_available()) << "the curl binary is required by this test (apt-get install curl)";
    TwoServersTest::SetUp();
  }

  static CurlResult post(TestServer* server, const std::string& path, const json& body, const std::string& extra = "") {
    return curl(server->port(), "POST", path, body, "-H 'Authorization: Bearer curl-key' " + extra);
  }
  static json completion(const json& body) {
    const CurlResult r = post(stories_, "/v1/completions", body);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.parsed;
  }

};

TEST_F(ServerCurlTest, HealthModelsAndMetrics) {
  const CurlResult health = curl(stories_->port(), "GET", "/health");
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_EQ(health.status, 200);
  const CurlResult models = curl(stories_->port(), "GET", "/v1/models", nullptr, "-H 'Authorization: Bearer curl-key'");
  ASSERT_EQ(models.status, 200) << models.body;
  EXPECT_EQ(models.parsed["object"], "list");
  ASSERT_EQ(models.parsed["data"].size(), 1u);
  EXPECT_EQ(models.parsed["data"][0]["id"], "test-model");
  EXPECT_EQ(curl(stories_->port(), "GET", "/v1/models").status, 401);  // no key
  const CurlResult metrics = curl(stories_->port(), "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_GE(metric_value(metrics.body, "nucleus_kv_cache_blocks_used"), 0) << metrics.body;
  EXPECT_GE(metric_value(metrics.body, "nucleus_num_requests_running"), 0) << metrics.body;
  EXPECT_NE(metrics.body.find("# TYPE nucleus_time_to_first_token_seconds histogram"), std::string::npos) << metrics.body;
}

TEST_F(ServerCurlTest, CompletionUsageSeedAndNTwo) {
  const json body = {{"model", "test-model"}, {"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 1.0},
                     {"seed", 7}, {"ignore_eos", true}};
  const json a = completion(body), b = completion(body);
  EXPECT_EQ(a["object"], "text_completion");
  EXPECT_EQ(a["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(a["usage"]["completion_tokens"], 12);
  EXPECT_EQ(a["usage"]["total_tokens"], a["usage"]["prompt_tokens"].get<int>() + 12);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]) << "same seed, same text";
  json other = body;
  other["seed"] = 8;
  EXPECT_NE(completion(other)["choices"][0]["text"], a["choices"][0]["text"]) << "another seed, another text";

  json two = body;
  two["n"] = 2;
  const json r = completion(two);
  ASSERT_EQ(r["choices"].size(), 2u);
  EXPECT_EQ(r["choices"][0]["index"], 0);
  EXPECT_EQ(r["choices"][1]["index"], 1);
  EXPECT_EQ(r["usage"]["completion_tokens"], 24);
}

TEST_F(ServerCurlTest, StreamingEqualsNonStreaming) {
  json body = {{"prompt", "Lily and Tom"}, {"max_tokens", 30}, {"temperature", 0.9}, {"seed", 42}};
  const json full = completion(body);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const CurlResult r = post(stories_, "/v1/completions", body, "-N");
  ASSERT_EQ(r.status, 200) << r.body;
  bool done = false;
  const std::vector<json> events = sse_events(r.body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(events.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) text += events[i]["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, full["choices"][0]["text"]);
  EXPECT_EQ(events[events.size() - 2]["choices"][0]["finish_reason"], full["choices"][0]["finish_reason"]);
  EXPECT_EQ(events.back()["usage"], full["usage"]);
}

TEST_F(ServerCurlTest, LogprobsAndStopStrings) {
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}, {"ignore_eos", true}};
  json with_logprobs = base;
  with_logprobs["logprobs"] = 3;
  with_logprobs["max_tokens"] = 5;
  const json lp = completion(with_logprobs)["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  ASSERT_EQ(lp["token_logprobs"].size(), 5u);
  ASSERT_EQ(lp["top_logprobs"].size(), 5u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 3u);
  EXPECT_LE(lp["token_logprobs"][0].get<double>(), 0.0);

  const std::string text = completion(base)["choices"][0]["text"];
  ASSERT_GE(text.size(), 16u) << text;
  const std::string stop = text.substr(10, 3);
  json stopped = base;
  stopped["stop"] = {stop};
  const json r = completion(stopped);
  EXPECT_EQ(r["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServerCurlTest, ChatCompletionAndChatStream) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Tell me about cats 🐱"}}}}, {"max_tokens", 12}, {"seed", 5},
               {"temperature", 1.0}};
  const CurlResult full = post(qwen_, "/v1/chat/completions", body);
  ASSERT_EQ(full.status, 200) << full.body;
  EXPECT_EQ(full.parsed["object"], "chat.completion");
  EXPECT_EQ(full.parsed["choices"][0]["message"]["role"], "assistant");
  body["stream"] = true;
  const CurlResult r = post(qwen_, "/v1/chat/completions", body, "-N");
  ASSERT_EQ(r.status, 200) << r.body;
  bool done = false;
  std::string text;
  for (const json& e : sse_events(r.body, &done)) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (e["choices"][0]["delta"].contains("content")) text += e["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(text, full.parsed["choices"][0]["message"]["content"]);
}

TEST_F(ServerCurlTest, TokenizeDetokenizeRoundTrip) {
  const CurlResult t = post(stories_, "/tokenize", {{"prompt", "Hello world"}});
  ASSERT_EQ(t.status, 200) << t.body;
  ASSERT_FALSE(t.parsed["tokens"].empty());
  EXPECT_EQ(t.parsed["count"], t.parsed["tokens"].size());
  const CurlResult d = post(stories_, "/detokenize", {{"tokens", t.parsed["tokens"]}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.parsed["prompt"], "Hello world");
}

}  // namespace
}  // namespace nucleus::test
