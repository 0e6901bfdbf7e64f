// The OpenAI-compatible HTTP front end (cpp-httplib). Routes only translate: JSON → openai_protocol →
// Generation (AsyncEngine streams) → openai_responses → JSON / SSE. No model logic lives here.
//
//   POST /v1/completions, /v1/chat/completions   (stream: SSE chunks, then "data: [DONE]")
//   GET  /v1/models, /health (503 until a model is attached or while shutting down), /metrics
//   POST /tokenize, /detokenize
//   GET  / and /explainer/* (the explainer UI), /explain/* (its JSON data: explainer_routes.h)
//
// Limits: bodies over max_body_bytes get 413; with an API key every /v1/* route needs
// "Authorization: Bearer KEY" (401); more sequences than max_num_seqs + max_waiting_seqs in flight get
// 503 with Retry-After. Every error body is OpenAI's {"error": {message, type, param, code}}.
//
// With ServerConfig::replica_id every response carries "x-nucleus-replica: ID" (behind a balancer).
//
// Lifecycle: bind() → serve() on some thread (blocks) → attach() once the model is loaded →
// shutdown() from any thread: new generation requests get 503, in-flight ones get until the deadline,
// then are aborted, then the listener stops and serve() returns.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/async_engine.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/openai_protocol.h"
#include "server/server_config.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace nucleus::explain {
class Explainer;
}

namespace nucleus::server {

// The loaded model as the server sees it. The engine and tokenizer are borrowed: they must outlive
// the server's serve() loop.
struct ServedModel {
  AsyncEngine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  std::optional<ChatTemplate> chat_template;  // none: chat requests get 400 with chat_template_error
  std::string chat_template_error;
  std::string name;
  int64_t max_model_len = 0;
  explain::Explainer* explainer = nullptr;  // the /explain/* endpoints (503 without one); borrowed like the engine
  Speculation speculation;                  // serve --draft / --spec: every sequence speculates
  std::optional<ToolCallFormat> tool_call_format;  // serve --tool-call-parser (nullopt: read from the template)
  bool reasoning_split = true;                     // serve --reasoning-format none turns it off
};

class HttpServer {
 public:
  explicit HttpServer(ServerConfig config);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free port); returns the port. Throws Error when it cannot.
  int bind();
  // Accepts connections until shutdown(); call after bind().
  void serve();
  void attach(ServedModel model);
  void shutdown();

  int port() const { return port_; }
  ServerMetrics& metrics() { return metrics_; }
  int64_t sequences_in_flight() const { return in_flight_.load(); }

 private:
  struct Served;  // ServedModel + its ModelContext
  std::shared_ptr<const Served> served() const;
  std::shared_ptr<const Served> require_served() const;  // throws 503 while loading
  void register_routes();
  void handle_generation(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  void handle_tokenize(const httplib::Request& req, httplib::Response& res, bool tokenize);

  ServerConfig config_;
  std::unique_ptr<httplib::Server> http_;
  ServerMetrics metrics_;
  int port_ = 0;
  mutable std::mutex served_mutex_;
  std::shared_ptr<const Served> served_;
  std::atomic<int64_t> in_flight_{0};
  std::atomic<bool> draining_{false};     // shutting down: refuse new generation requests
  std::atomic<bool> force_abort_{false};  // the deadline passed: abort what is in flight
  std::atomic<bool> serve_started_{false};   // serve() was entered
  std::atomic<bool> serve_returned_{false};  // serve() has returned
};

}  // namespace nucleus::server
