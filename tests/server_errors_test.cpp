// A battery of malformed requests: each must get the right 4xx with an OpenAI-style error body
// ({"error": {"message", "type", "param", "code"}}, naming the field where there is one), and the
// server must keep serving afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "server_test_harness.h"

namespace nucleus::test {
namespace {

using nlohmann::json;

struct BadRequest {
  const char* name;
  const char* path;
  std::string body;
  int status;
  const char* param;  // expected "param", or nullptr for "don't care"
};

// Sends raw bytes and returns the status code of whatever response comes back (0: none).
int raw_exchange(int port, const std::string& bytes, std::string* response_out = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return 0;
  }
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading everything
    sent += static_cast<size_t>(n);
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) {
    response.append(buffer, static_cast<size_t>(n));
    if (response.find("\r\n\r\n") != std::string::npos && response.find("}") != std::string::npos) break;
  }
  ::close(fd);
  if (response_out) *response_out = response;
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

class ServerErrorsTest : public TwoServersTest<ServerErrorsTest> {
 protected:
  static void expect_error_body(const HttpResult& r, const std::string& what) {
    ASSERT_TRUE(r.json.is_object()) << what << ": body is not JSON: " << r.body;
    ASSERT_TRUE(r.json.contains("error")) << what << ": " << r.body;
    const json& e = r.json["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << what;
    EXPECT_TRUE(e["type"].is_string()) << what;
    EXPECT_TRUE(e.contains("param")) << what;
    EXPECT_TRUE(e.contains("code")) << what;
  }
};

TEST_F(ServerErrorsTest, MalformedRequestsGetTheRight4xxAndTheServerKeepsServing) {
  const std::string too_long = json(std::vector<int>(static_cast<size_t>(stories_->max_model_len()) + 10, 5)).dump();
  const std::vector<BadRequest> completions = {
      {"truncated JSON", "/v1/completions", R"({"prompt": "x",)", 400, nullptr},
      {"body is a list", "/v1/completions", "[1, 2]", 400, nullptr},
      {"body is a string", "/v1/completions", R"("hello")", 400, nullptr},
      {"empty body", "/v1/completions", "", 400, nullptr},
      {"missing prompt", "/v1/completions", "{}", 400, "prompt"},
      {"prompt is a number", "/v1/completions", R"({"prompt": 5})", 400, "prompt"},
      {"prompt is an empty list", "/v1/completions", R"({"prompt": []})", 400, "prompt"},
      {"token id out of vocabulary", "/v1/completions", R"({"prompt": [999999]})", 400, "prompt"},
      {"negative token id", "/v1/completions", R"({"prompt": [-1]})", 400, "prompt"},
      {"mixed prompt list", "/v1/completions", R"({"prompt": ["a", 5]})", 400, "prompt"},
      {"prompt over the context", "/v1/completions", R"({"prompt": )" + too_long + "}", 400, "prompt"},
      {"max_tokens as string", "/v1/completions", R"({"prompt": "x", "max_tokens": "10"})", 400, "max_tokens"},
      {"negative max_tokens", "/v1/completions", R"({"prompt": "x", "max_tokens": -5})", 400, "max_tokens"},
      {"zero max_tokens", "/v1/completions", R"({"prompt": "x", "max_tokens": 0})", 400, "max_tokens"},
      {"huge max_tokens", "/v1/completions", R"({"prompt": "x", "max_tokens": 1000000000000})", 400, "max_tokens"},
      {"max_tokens beyond the context", "/v1/completions", R"({"prompt": "x", "max_tokens": 100000})", 400, "max_tokens"},
      {"fractional max_tokens", "/v1/completions", R"({"prompt": "x", "max_tokens": 1e30})", 400, "max_tokens"},
      {"negative temperature", "/v1/completions", R"({"prompt": "x", "temperature": -1})", 400, "temperature"},
      {"temperature as string", "/v1/completions", R"({"prompt": "x", "temperature": "hot"})", 400, "temperature"},
      {"temperature too high", "/v1/completions", R"({"prompt": "x", "temperature": 5})", 400, "temperature"},
      {"top_p above 1", "/v1/completions", R"({"prompt": "x", "top_p": 1.5})", 400, "top_p"},
      {"top_k below -1", "/v1/completions", R"({"prompt": "x", "top_k": -5})", 400, "top_k"},
      {"min_p above 1", "/v1/completions", R"({"prompt": "x", "min_p": 2})", 400, "min_p"},
      {"n zero", "/v1/completions", R"({"prompt": "x", "n": 0})", 400, "n"},
      {"n huge", "/v1/completions", R"({"prompt": "x", "n": 1000})", 400, "n"},
      {"presence_penalty out of range", "/v1/completions", R"({"prompt": "x", "presence_penalty": 3})", 400, "presence_penalty"},
      {"frequency_penalty as string", "/v1/completions", R"({"prompt": "x", "frequency_penalty": "x"})", 400, "frequency_penalty"},
      {"repetition_penalty zero", "/v1/completions", R"({"prompt": "x", "repetition_penalty": 0})", 400, "repetition_penalty"},
      {"logit_bias key not an id", "/v1/completions", R"({"prompt": "x", "logit_bias": {"abc": 1}})", 400, "logit_bias"},
      {"logit_bias value too big", "/v1/completions", R"({"prompt": "x", "logit_bias": {"5": 500}})", 400, "logit_bias"},
      {"logit_bias is a list", "/v1/completions", R"({"prompt": "x", "logit_bias": [1, 2]})", 400, "logit_bias"},
      {"stop is a number", "/v1/completions", R"({"prompt": "x", "stop": 5})", 400, "stop"},
      {"stop list of numbers", "/v1/completions", R"({"prompt": "x", "stop": [1]})", 400, "stop"},
      {"seed as string", "/v1/completions", R"({"prompt": "x", "seed": "abc"})", 400, "seed"},
      {"fractional seed", "/v1/completions", R"({"prompt": "x", "seed": 1.5})", 400, "seed"},
      {"stream as string", "/v1/completions", R"({"prompt": "x", "stream": "yes"})", 400, "stream"},
      {"stream_options without stream", "/v1/completions", R"({"prompt": "x", "stream_options": {"include_usage": true}})", 400,
       "stream_options"},
      {"logprobs too many", "/v1/completions", R"({"prompt": "x", "logprobs": 50})", 400, "logprobs"},
      {"min_tokens above max_tokens", "/v1/completions", R"({"prompt": "x", "max_tokens": 4, "min_tokens": 9})", 400, "min_tokens"},
      {"beam search", "/v1/completions", R"({"prompt": "x", "use_beam_search": true})", 400, "use_beam_search"},
      {"model not a string", "/v1/completions", R"({"prompt": "x", "model": 42})", 400, "model"},
      {"unknown model", "/v1/completions", R"({"prompt": "x", "model": "gpt-17"})", 404, "model"},
      {"invalid UTF-8 in a string", "/v1/completions", std::string("{\"prompt\": \"\xff\xfe\xfd\"}"), 400, nullptr},
      {"truncated UTF-8 sequence", "/v1/completions", std::string("{\"prompt\": \"caf\xc3\"}"), 400, nullptr},
      {"overlong UTF-8 encoding", "/v1/completions", std::string("{\"prompt\": \"\xc0\xaf\"}"), 400, nullptr},
      {"invalid UTF-8 in a stop string", "/v1/completions", std::string("{\"prompt\": \"x\", \"stop\": [\"\xed\xa0\x80\"]}"), 400,
       nullptr},
      {"lone surrogate escape", "/v1/completions", R"({"prompt": "\udc00"})", 400, nullptr},
      {"prompt is null", "/v1/completions", R"({"prompt": null})", 400, "prompt"},
      {"prompt is an object", "/v1/completions", R"({"prompt": {"text": "x"}})", 400, "prompt"},
      {"negative n", "/v1/completions", R"({"prompt": "x", "n": -1})", 400, "n"},
      {"negative top_p", "/v1/completions", R"({"prompt": "x", "top_p": -0.5})", 400, "top_p"},
      {"negative logprobs", "/v1/completions", R"({"prompt": "x", "logprobs": -1})", 400, "logprobs"},
      {"number overflowing a double", "/v1/completions", R"({"prompt": "x", "temperature": 1e999})", 400, nullptr},
      {"deeply nested JSON", "/v1/completions", std::string(100000, '[') + std::string(100000, ']'), 400, nullptr},
      {"tokenize invalid UTF-8", "/tokenize", std::string("{\"prompt\": \"\x80\"}"), 400, nullptr},
      {"unknown route", "/v1/nope", "{}", 404, nullptr},
      {"misspelled route", "/v1/completion", R"({"prompt": "x"})", 404, nullptr},
      {"detokenize ids as string", "/detokenize", R"({"tokens": "abc"})", 400, "tokens"},
      {"detokenize negative id", "/detokenize", R"({"tokens": [-5]})", 400, "tokens"},
      {"tokenize without prompt", "/tokenize", "{}", 400, "prompt"},
  };
  const std::vector<BadRequest> chat = {
      {"missing messages", "/v1/chat/completions", "{}", 400, "messages"},
      {"empty messages", "/v1/chat/completions", R"({"messages": []})", 400, "messages"},
      {"messages not a list", "/v1/chat/completions", R"({"messages": "hi"})", 400, "messages"},
      {"message not an object", "/v1/chat/completions", R"({"messages": ["hi"]})", 400, "messages[0]"},
      {"unknown role", "/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "hi"}]})", 400, "messages[0].role"},
      {"content a number", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": 5}]})", 400, "messages[0].content"},
      {"message without a role", "/v1/chat/completions", R"({"messages": [{"content": "hi"}]})", 400, "messages[0].role"},
      {"chat_template_kwargs replacing the messages", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"messages": []}})", 400,
       "chat_template_kwargs.messages"},
      {"enable_thinking not a boolean", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"enable_thinking": "no"}})", 400,
       "chat_template_kwargs.enable_thinking"},
      {"chat_template_kwargs not an object", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": [1]})", 400, "chat_template_kwargs"},
      {"invalid UTF-8 in a message", "/v1/chat/completions",
       std::string("{\"messages\": [{\"role\": \"user\", \"content\": \"\xf5\x80\x80\x80\"}]}"), 400, nullptr},
      {"top_logprobs without logprobs", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2})", 400, "top_logprobs"},
      {"top_logprobs too many", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 50})", 400, "top_logprobs"},
      {"max_completion_tokens negative", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": -1})", 400, "max_completion_tokens"},
  };
  int checked = 0;
  auto run = [&](TestServer& server, const std::vector<BadRequest>& cases) {
    for (const BadRequest& c : cases) {
      const HttpResult r = post_raw(server.port(), c.path, c.body);
      EXPECT_EQ(r.status, c.status) << c.name << ": " << r.body;
      expect_error_body(r, c.name);
      if (c.param && r.json.is_object()) {
        EXPECT_EQ(r.json["error"]["param"], c.param) << c.name << ": " << r.body;
      }
      ++checked;
    }
  };
  run(*stories_, completions);
  run(*qwen_, chat);

  // The context-length message states both numbers.
  const HttpResult over = post_raw(stories_->port(), "/v1/completions", R"({"prompt": )" + too_long + "}");
  const std::string message = over.json["error"]["message"];
  EXPECT_NE(message.find(std::to_string(stories_->max_model_len())), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(stories_->max_model_len() + 10)), std::string::npos) << message;

  // A wrong method on a known route.
  EXPECT_EQ(get(stories_->port(), "/v1/completions").status, 404);
  ++checked;

  // Garbage instead of HTTP, and a 10 MB body: httplib answers, we shape the body.
  std::string response;
  EXPECT_EQ(raw_exchange(stories_->port(), std::string("\x16\x03\x01\x02\x00garbage\r\n\r\n", 17), &response), 400) << response;
  ++checked;
  EXPECT_EQ(raw_exchange(stories_->port(), "BREW /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n", &response), 400) << response;
  ++checked;
  EXPECT_EQ(raw_exchange(stories_->port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: banana\r\n\r\n{}", &response),
            400)
      << response;
  ++checked;
  const std::string big(10 << 20, 'a');
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(big.size()) + "\r\n\r\n" + big;
  EXPECT_EQ(raw_exchange(stories_->port(), request, &response), 413) << response.substr(0, 300);
  EXPECT_NE(response.find("\"error\""), std::string::npos) << response.substr(0, 300);
  ++checked;

  EXPECT_GE(checked, 30);
  // Still serving.
  EXPECT_EQ(get(stories_->port(), "/health").status, 200);
  const HttpResult ok = post_json(stories_->port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 5}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  const HttpResult chat_ok = post_json(qwen_->port(), "/v1/chat/completions",
                                       {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 3}});
  EXPECT_EQ(chat_ok.status, 200) << chat_ok.body;
  // Nothing leaked into the engine.
  const HttpResult metrics = get(stories_->port(), "/metrics");
  EXPECT_EQ(metric_value(metrics.body, "nucleus_kv_cache_blocks_used"), 0);
  EXPECT_EQ(stories_->http().sequences_in_flight(), 0);
}

TEST(ServerLimitsTest, WrongOrMissingKeyIs401) {
  NUCLEUS_REQUIRE_SHARED();
  server::ServerConfig config;
  config.api_key = "k3y";
  TestServer server(shared_path("models/stories260K.gguf"), config);
  const HttpResult missing = post_json(server.port(), "/v1/completions", {{"prompt", "x"}});
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.json["error"]["code"], "invalid_api_key");
  EXPECT_EQ(post_json(server.port(), "/v1/completions", {{"prompt", "x"}}, {{"Authorization", "Bearer nope"}}).status, 401);
  EXPECT_EQ(post_json(server.port(), "/v1/completions", {{"prompt", "x"}}, {{"Authorization", "k3y"}}).status, 401);
  EXPECT_EQ(post_json(server.port(), "/v1/completions", {{"prompt", "x"}}, {{"Authorization", "Bearer "}}).status, 401);
  EXPECT_EQ(get(server.port(), "/v1/models", {{"Authorization", "Bearer wrong"}}).status, 401);
  // Still serving the right key.
  EXPECT_EQ(post_json(server.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}, {{"Authorization", "Bearer k3y"}}).status,
            200);
}

TEST(ServerLimitsTest, FullQueueGets503WithRetryAfter) {
  NUCLEUS_REQUIRE_SHARED();
  server::ServerConfig config;
  config.max_num_seqs = 2;
  config.max_waiting_seqs = 1;
  EngineConfig engine_config;
  engine_config.max_num_seqs = 2;
  TestServer server(shared_path("models/stories260K.gguf"), config, engine_config);
  const HttpResult full = post_json(server.port(), "/v1/completions", {{"prompt", "x"}, {"n", 4}, {"max_tokens", 4}});
  EXPECT_EQ(full.status, 503) << full.body;
  EXPECT_EQ(full.json["error"]["code"], "server_overloaded");
  EXPECT_TRUE(full.headers.count("Retry-After"));
  EXPECT_EQ(post_json(server.port(), "/v1/completions", {{"prompt", "x"}, {"n", 3}, {"max_tokens", 4}}).status, 200);
}

}  // namespace
}  // namespace nucleus::test
