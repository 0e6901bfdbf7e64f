// The real server, in-process, on a free loopback port — and the small HTTP client helpers the
// server tests share (plain JSON posts, SSE streams that can hang up early, /metrics reads).
#pragma once
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/async_engine.h"
#include "engine/model_source.h"
#include "server/http_server.h"
#include "test_helpers.h"
#include "tokenizer/chat_template.h"

namespace nucleus::test {

class TestServer {
 public:
  TestServer(const std::string& model_path, server::ServerConfig config = {}, EngineConfig engine_config = {},
             bool attach_model = true) {
    config.host = "127.0.0.1";
    config.port = 0;
    if (config.served_model_name.empty()) config.served_model_name = "test-model";
    loaded_ = load_model(ModelSource{model_path, "", {}});
    if (engine_config.kv_cache_bytes == (256ll << 20) && engine_config.num_blocks == 0) engine_config.kv_cache_bytes = 16ll << 20;
    auto llm = std::make_unique<LLMEngine>(*loaded_.model, loaded_.tokenizer.get(), engine_config);
    max_model_len_ = llm->max_model_len();
    engine_ = std::make_unique<AsyncEngine>(std::move(llm));
    http_ = std::make_unique<server::HttpServer>(config);
    port_ = http_->bind();
    thread_ = std::thread([this] { http_->serve(); });
    if (attach_model) attach();
  }
  ~TestServer() {
    http_->shutdown();
    thread_.join();
    http_.reset();
    engine_.reset();
  }

  // speculation: as `serve --draft/--spec` sets it up (default: plain decoding).
  void attach(server::Speculation speculation = {}) {
    server::ServedModel served;
    served.speculation = std::move(speculation);
    served.engine = engine_.get();
    served.tokenizer = loaded_.tokenizer.get();
    served.max_model_len = max_model_len_;
    try {
      served.chat_template = chat_template_for_model(loaded_.model->file(), *loaded_.tokenizer, "");
    } catch (const std::exception& e) {
      served.chat_template_error = e.what();
    }
    http_->attach(std::move(served));
  }

  int port() const { return port_; }
  int64_t max_model_len() const { return max_model_len_; }
  const Tokenizer& tokenizer() const { return *loaded_.tokenizer; }
  server::HttpServer& http() { return *http_; }
  AsyncEngine& engine() { return *engine_; }

 private:
  LoadedModel loaded_;
  std::unique_ptr<AsyncEngine> engine_;
  std::unique_ptr<server::HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
  int64_t max_model_len_ = 0;
};

// The fixture of a suite sharing two in-process servers for all its tests: stories260K (llama, no
// chat template) and qwen2-f16 (ChatML). Suite may declare `static server::ServerConfig config()`
// for both servers' settings (e.g. an API key). Use: class MyTest : public TwoServersTest<MyTest>.
template <class Suite>
class TwoServersTest : public ::testing::Test {
 protected:
  static server::ServerConfig config() { return {}; }
  static void SetUpTestSuite() {
    if (!shared_available()) return;
    stories_ = new TestServer(shared_path("models/stories260K.gguf"), Suite::config());
    qwen_ = new TestServer(shared_path("models/test/qwen2-f16.gguf"), Suite::config());
  }
  static void TearDownTestSuite() {
    delete stories_;
    delete qwen_;
    stories_ = qwen_ = nullptr;
  }
  void SetUp() override { NUCLEUS_REQUIRE_SHARED(); }

  static inline TestServer* stories_ = nullptr;
  static inline TestServer* qwen_ = nullptr;
};

struct HttpResult {
  int status = 0;  // 0: no response (connection failed)
  std::string body;
  nlohmann::json json;  // parsed body (null when not JSON)
  httplib::Headers headers;
};

inline HttpResult to_result(const httplib::Result& r) {
  HttpResult out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.headers = r->headers;
  out.json = nlohmann::json::parse(r->body, nullptr, false);
  if (out.json.is_discarded()) out.json = nullptr;
  return out;
}

inline HttpResult post_raw(int port, const std::string& path, const std::string& body, const httplib::Headers& headers = {},
                           const char* content_type = "application/json") {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  return to_result(client.Post(path.c_str(), headers, body, content_type));
}

inline HttpResult post_json(int port, const std::string& path, const nlohmann::json& body, const httplib::Headers& headers = {}) {
  return post_raw(port, path, body.dump(), headers);
}

inline HttpResult get(int port, const std::string& path, const httplib::Headers& headers = {}) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  return to_result(client.Get(path.c_str(), headers));
}

struct StreamResult {
  int status = 0;
  std::vector<nlohmann::json> chunks;  // every "data: {...}" event, in order
  std::vector<std::string> raw_texts;  // per chunk: the delta text exactly as sent (before any JSON decoding issue)
  bool done = false;                   // "data: [DONE]" arrived
  bool hung_up = false;                // we disconnected on purpose
  std::string client_error;            // httplib's error when the exchange failed
};

// POSTs with stream: true and parses the SSE events as they arrive. With hang_up_after_chunks ≥ 0 the
// client disconnects after that many events.
inline StreamResult post_stream_raw(int port, const std::string& path, const std::string& body, int hang_up_after_chunks = -1);
inline StreamResult post_stream(int port, const std::string& path, nlohmann::json body, int hang_up_after_chunks = -1) {
  body["stream"] = true;
  return post_stream_raw(port, path, body.dump(), hang_up_after_chunks);
}

// The same with the body as text (which must ask for "stream": true itself).
inline StreamResult post_stream_raw(int port, const std::string& path, const std::string& body, int hang_up_after_chunks) {
  StreamResult result;
  std::string buffer;
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body;
  request.headers.emplace("Content-Type", "application/json");
  request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    buffer.append(data, length);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        result.done = true;
      } else {
        result.chunks.push_back(nlohmann::json::parse(payload));
      }
      if (hang_up_after_chunks >= 0 && static_cast<int>(result.chunks.size()) >= hang_up_after_chunks) {
        result.hung_up = true;
        return false;
      }
    }
    return true;
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  client.send(request, response, error);
  result.status = response.status;
  if (error != httplib::Error::Success) result.client_error = httplib::to_string(error);
  return result;
}

// Concatenated text of one choice in a stream (completions: "text"; chat: delta.content).
inline std::string stream_text(const StreamResult& stream, int index = 0) {
  std::string text;
  for (const nlohmann::json& chunk : stream.chunks)
    for (const nlohmann::json& choice : chunk.value("choices", nlohmann::json::array())) {
      if (choice.value("index", -1) != index) continue;
      if (choice.contains("text")) text += choice["text"].get<std::string>();
      if (choice.contains("delta") && choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    }
  return text;
}

// The value of a sample in Prometheus text, named as written (with its labels, if any:
// `name{label="v"}`); -1 when absent.
// The value of the first sample of series `name` (unlabelled, or with any labels); -1 when absent.
inline double metric_value(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0 || line.size() <= name.size()) continue;
    if (line[name.size()] == ' ') return std::stod(line.substr(name.size() + 1));
    if (line[name.size()] == '{') return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

}  // namespace nucleus::test
