#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <thread>

#include "core/error.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/request_deadline.h"
#include "server/explainer_routes.h"
#include "server/route_helpers.h"
#include "server/openai_responses.h"
#include "server/sse.h"

namespace nucleus::server {

using nlohmann::json;

struct HttpServer::Served {
  ServedModel model;
  ModelContext context;
  ConstraintCompiler constraints;  // compiled structured-output grammars, cached by content
};

namespace {

constexpr int64_t kPollMilliseconds = 50;  // how often a waiting handler re-checks for shutdown

// cpp-httplib's server with two changes:
// - The packaged cpp-httplib listens with a backlog of 5: a burst of clients would have SYNs
//   dropped (and retried a second later, or failed). Listening again on the bound socket widens
//   the queue.
// - Each connection is served through a DeadlineStream (request_deadline.h): a request must arrive
//   whole within ServerConfig::request_read_seconds, so a trickling client cannot hold a worker.
class NucleusHttplibServer : public httplib::Server {
 public:
  explicit NucleusHttplibServer(double request_read_seconds)
      : request_read_(std::chrono::milliseconds(static_cast<int64_t>(request_read_seconds * 1000))) {}
  void widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }

 private:
  bool process_and_close_socket(socket_t sock) override {
    ConnectionTimeouts timeouts;
    timeouts.read = std::chrono::milliseconds(read_timeout_sec_ * 1000 + read_timeout_usec_ / 1000);
    timeouts.write = std::chrono::milliseconds(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000);
    timeouts.keep_alive = std::chrono::milliseconds(keep_alive_timeout_sec_ * 1000);
    timeouts.request = request_read_;
    timeouts.max_requests = keep_alive_max_count_;
    serve_connection(
        sock, timeouts, [this] { return svr_sock_ == INVALID_SOCKET; },
        [this](httplib::Stream& stream, bool close_connection, bool& connection_closed) {
          return process_request(stream, close_connection, connection_closed, nullptr);
        });
    return true;
  }

  std::chrono::milliseconds request_read_;
};

}  // namespace

HttpServer::HttpServer(ServerConfig config) : config_(std::move(config)), http_(std::make_unique<NucleusHttplibServer>(config_.request_read_seconds)) {
  const int threads = config_.http_threads > 0 ? config_.http_threads : static_cast<int>(2 * config_.max_num_seqs + 16);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(config_.max_body_bytes);
  http_->set_tcp_nodelay(true);  // each SSE chunk leaves at once
  if (!config_.replica_id.empty()) http_->set_default_headers({{"x-nucleus-replica", config_.replica_id}});
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind a port already in use
  // and silently share its connections; SO_REUSEADDR alone allows quick restarts and no sharing.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  register_routes();
}

HttpServer::~HttpServer() { shutdown(); }

int HttpServer::bind() {
  if (config_.port == 0) {
    port_ = http_->bind_to_any_port(config_.host);
    if (port_ < 0) throw Error("cannot bind " + config_.host + " to a free port");
  } else {
    if (!http_->bind_to_port(config_.host, config_.port))
      throw Error("cannot bind " + config_.host + ":" + std::to_string(config_.port) + " (in use, or not a local address?)");
    port_ = config_.port;
  }
  static_cast<NucleusHttplibServer&>(*http_).widen_backlog(1024);
  return port_;
}

void HttpServer::serve() {
  serve_started_ = true;
  if (!draining_) http_->listen_after_bind();  // draining: shutdown() came first, never listen
  serve_returned_ = true;
}

void HttpServer::attach(ServedModel model) {
  auto served = std::make_shared<Served>();
  served->model = std::move(model);
  if (served->model.name.empty()) served->model.name = config_.served_model_name;
  ModelContext& context = served->context;
  context.tokenizer = served->model.tokenizer;
  context.chat_template = served->model.chat_template ? &*served->model.chat_template : nullptr;
  context.chat_template_error = served->model.chat_template_error;
  context.model_name = served->model.name;
  context.max_model_len = served->model.max_model_len;
  context.constraints = &served->constraints;
  context.tool_call_format = served->model.tool_call_format;
  context.reasoning_split = served->model.reasoning_split;
  std::lock_guard<std::mutex> lock(served_mutex_);
  served_ = std::move(served);
}

void HttpServer::shutdown() {
  if (draining_.exchange(true)) return;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                          std::chrono::duration<double>(config_.shutdown_deadline_seconds));
  while (in_flight_.load() > 0 && clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  force_abort_ = true;  // handlers abort their sequences at their next poll
  const auto grace = clock::now() + std::chrono::seconds(2);
  while (in_flight_.load() > 0 && clock::now() < grace) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // httplib's stop() only reaches a listener that is already running: one that is about to start
  // (a model that fails to load within microseconds of bind()) would start after it and accept for
  // ever. serve() checks draining_ after marking itself started, so until it returns, stop again.
  http_->stop();
  while (serve_started_ && !serve_returned_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    http_->stop();
  }
}

std::shared_ptr<const HttpServer::Served> HttpServer::served() const {
  std::lock_guard<std::mutex> lock(served_mutex_);
  return served_;
}

std::shared_ptr<const HttpServer::Served> HttpServer::require_served() const {
  auto served = this->served();
  if (!served) throw ApiError(503, "the model is still loading", "service_unavailable");
  return served;
}

void HttpServer::register_routes() {
  httplib::Server& http = *http_;
  const int retry_after = config_.retry_after_seconds;

  http.set_pre_routing_handler([this, retry_after](const httplib::Request& req, httplib::Response& res) {
    if (config_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + config_.api_key) return httplib::Server::HandlerResponse::Unhandled;
    const bool missing = !req.has_header("Authorization");
    send_error(res, ApiError(401, missing ? "missing API key: send 'Authorization: Bearer KEY'" : "incorrect API key provided",
                             "authentication_error", "", "invalid_api_key"),
               retry_after);
    return httplib::Server::HandlerResponse::Handled;
  });

  // Errors httplib produces itself (no route, body too large, unparsable HTTP) get JSON bodies too.
  http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message;
    if (res.status == 404) {
      message = "no route for " + req.method + " " + req.path;
    } else if (res.status == 413) {
      message = "the request body exceeds the limit of " + std::to_string(config_.max_body_bytes) + " bytes";
    } else {
      message = res.status == 400 ? "malformed HTTP request" : "request failed with status " + std::to_string(res.status);
    }
    res.set_content(dump_json(error_body(message, error_type_for_status(res.status), "", "")), "application/json");
  });

  http.set_logger([this](const httplib::Request&, const httplib::Response& res) { metrics_.count_http_response(res.status); });

  // httplib 0.11 enforces max_body_bytes only on a Content-Length: a chunked body it would buffer
  // whole, however large. So these routes read their body themselves, keeping at most the limit;
  // past it they read on and drop the rest (as httplib skips an over-long Content-Length body), then
  // answer 413.
  using BodyHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
  auto capped = [this](BodyHandler handler) {
    return [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                                const httplib::ContentReader& reader) {
      if (req.is_multipart_form_data()) {  // httplib would parse it into parts we never read
        res.set_header("Connection", "close");
        send_error(res, ApiError(400, "the request body must be JSON, not multipart/form-data", "invalid_request_error"),
                   config_.retry_after_seconds);
        return;
      }
      std::string body;
      bool over = false;
      const bool complete = reader([&](const char* data, size_t length) {
        if (!over && body.size() + length > config_.max_body_bytes) {
          over = true;
          std::string().swap(body);
        }
        if (!over) body.append(data, length);
        return true;
      });
      if (over || res.status == 413) {
        res.status = 413;  // the error handler writes the body
        return;
      }
      if (!complete) {  // the rest of the connection's bytes cannot be trusted to start a request
        res.set_header("Connection", "close");
        send_error(res, ApiError(400, "the request body did not arrive whole (cut off, or slower than the server's --request-timeout)",
                                 "invalid_request_error"),
                   config_.retry_after_seconds);
        return;
      }
      httplib::Request full = req;
      full.body = std::move(body);
      handler(full, res);
    };
  };
  http.Post("/v1/completions", capped([this](const httplib::Request& req, httplib::Response& res) {
    handle_generation(req, res, Endpoint::completions);
  }));
  http.Post("/v1/chat/completions", capped([this](const httplib::Request& req, httplib::Response& res) {
    handle_generation(req, res, Endpoint::chat_completions);
  }));
  http.Post("/tokenize", capped([this](const httplib::Request& req, httplib::Response& res) { handle_tokenize(req, res, true); }));
  http.Post("/detokenize", capped([this](const httplib::Request& req, httplib::Response& res) { handle_tokenize(req, res, false); }));

  http.Get("/v1/models", [this, retry_after](const httplib::Request&, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      auto served = require_served();
      const json model = {{"id", served->model.name}, {"object", "model"}, {"created", 0}, {"owned_by", "nucleus"},
                          {"max_model_len", served->model.max_model_len}};
      send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
    });
  });

  http.Get("/health", [this, retry_after](const httplib::Request&, httplib::Response& res) {
    guarded(res, retry_after, [&] {
      if (draining_) throw ApiError(503, "the server is shutting down", "service_unavailable");
      require_served();
      send_json(res, 200, json::object());
    });
  });

  register_explainer_routes(http, retry_after, [this]() -> explain::Explainer& {
    auto served = require_served();
    if (!served->model.explainer) throw ApiError(503, "the explainer is not available on this server", "service_unavailable");
    return *served->model.explainer;
  });

  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto served = this->served();
    std::optional<EngineStats> stats;
    if (served) stats = served->model.engine->stats();
    res.set_content(metrics_.render(stats ? &*stats : nullptr, served ? served->model.name : ""), "text/plain; version=0.0.4");
  });
}

void HttpServer::handle_tokenize(const httplib::Request& req, httplib::Response& res, bool tokenize) {
  guarded(res, config_.retry_after_seconds, [&] {
    auto served = require_served();
    const json body = parse_body(req);
    if (tokenize) {
      const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(req.body, nullptr, false);
      const std::vector<int32_t> tokens =
          parse_tokenize_request(body, served->context, ordered.is_discarded() ? nullptr : &ordered);
      send_json(res, 200, {{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", served->model.max_model_len}});
    } else {
      const std::vector<int32_t> tokens = parse_detokenize_request(body, served->context);
      send_json(res, 200, {{"prompt", served->model.tokenizer->decode(tokens, false, true)}});
    }
  });
}

namespace {

// What a streaming response carries between calls of httplib's content provider.
struct StreamState {
  std::unique_ptr<Generation> generation;  // destroyed (aborting what is unfinished) with the response
  std::shared_ptr<const void> keep_alive;  // the served model the request was parsed against
  ResponseHeader header;
  const Tokenizer* tokenizer = nullptr;
  bool with_logprobs = false;
  bool include_usage = false;
  std::vector<size_t> text_offsets;  // per choice: bytes of text sent so far
  // Chat with reasoning or tools: per choice, the parser that splits its text, and whether it called.
  std::vector<ChatOutputStream> parsers;
  std::vector<bool> called_tools;
};

// A chat choice's delta through its output parser: the chunks to send (none while the parser holds
// text back), one per tool-call delta so clients see each call's id and name before its arguments.
std::vector<json> parsed_chat_chunks(StreamState& state, const SequenceDelta& delta, const json& logprobs) {
  const auto i = static_cast<size_t>(delta.index);
  ChatOutputDelta out = state.parsers[i].feed(delta.text);
  if (delta.finished) {
    ChatOutputDelta rest = state.parsers[i].finish();
    out.reasoning_content += rest.reasoning_content;
    out.content += rest.content;
    out.tool_calls.insert(out.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
  }
  if (!out.tool_calls.empty()) state.called_tools[i] = true;
  std::vector<ChatOutputDelta> parts;
  ChatOutputDelta text;
  text.reasoning_content = std::move(out.reasoning_content);
  text.content = std::move(out.content);
  if (!text.empty() || (out.tool_calls.empty() && (delta.finished || !logprobs.is_null()))) parts.push_back(std::move(text));
  for (ToolCallDelta& call : out.tool_calls) {
    ChatOutputDelta d;
    d.tool_calls.push_back(std::move(call));
    parts.push_back(std::move(d));
  }
  std::vector<json> chunks;
  for (size_t k = 0; k < parts.size(); ++k) {
    const bool last = k + 1 == parts.size();
    const json finish = last && delta.finished ? chat_finish_reason(delta.finish_reason, state.called_tools[i]) : json(nullptr);
    chunks.push_back(chat_output_chunk(state.header, delta.index, parts[k], k == 0 ? logprobs : json(nullptr), finish,
                                       state.include_usage));
  }
  return chunks;
}

// Writes a stream's events as outputs arrive; false when the client went away (its sequences are
// aborted at once, so their KV blocks return to the pool at the engine's next step).
bool stream_events(StreamState& state, httplib::DataSink& sink, const std::atomic<bool>& force_abort) {
  Generation& generation = *state.generation;
  auto write = [&](const std::string& event) { return sink.write(event.data(), event.size()); };
  if (state.header.endpoint == Endpoint::chat_completions)
    for (const SequenceState& s : generation.sequences())
      if (!write(sse_event(role_chunk(state.header, s.index, state.include_usage)))) return false;
  while (!generation.done()) {
    if (force_abort) generation.abort_all();
    for (const SequenceDelta& delta : generation.poll(kPollMilliseconds)) {
      size_t& offset = state.text_offsets[static_cast<size_t>(delta.index)];
      if (!state.parsers.empty()) {
        const json logprobs = delta_logprobs(state.header, delta, *state.tokenizer, state.with_logprobs, offset);
        for (const json& chunk : parsed_chat_chunks(state, delta, logprobs))
          if (!write(sse_event(chunk))) {
            generation.abort_all();
            return false;
          }
        offset += delta.text.size();
        continue;
      }
      // A client that went away fails the write: abort at once so its KV blocks return.
      if (!write(sse_event(delta_chunk(state.header, delta, *state.tokenizer, state.with_logprobs, offset,
                                       state.include_usage)))) {
        generation.abort_all();
        return false;
      }
      offset += delta.text.size();
    }
  }
  for (const SequenceState& s : generation.sequences())
    if (!s.error.empty()) write(sse_event(error_body(s.error, "invalid_request_error", "", "")));
  if (state.include_usage)
    write(sse_event(usage_chunk(state.header, generation.prompt_tokens(), generation.completion_tokens())));
  write(sse_done());
  sink.done();
  return true;
}

}  // namespace

void HttpServer::handle_generation(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  guarded(res, config_.retry_after_seconds, [&] {
    auto served = require_served();
    if (draining_) throw ApiError(503, "the server is shutting down", "service_unavailable");
    const json body = parse_body(req);
    // Schemas keep the client's property order: the body again, order-preserving, when it has one.
    nlohmann::ordered_json ordered;
    const bool has_schema = body.is_object() && (body.contains("response_format") || body.contains("structured_outputs") ||
                                                 body.contains("guided_json") || body.contains("json_schema"));
    const bool keep_order = has_schema || endpoint == Endpoint::chat_completions;  // chat: tools and messages too
    if (keep_order) ordered = nlohmann::ordered_json::parse(req.body, nullptr, false);
    const nlohmann::ordered_json* ordered_body = keep_order && !ordered.is_discarded() ? &ordered : nullptr;
    const GenerationRequest request = endpoint == Endpoint::completions
                                          ? parse_completion_request(body, served->context, ordered_body)
                                          : parse_chat_request(body, served->context, ordered_body);
    if (request.constraint_compile_seconds > 0) metrics_.observe_structured_compile(request.constraint_compile_seconds);
    const int64_t limit = config_.max_num_seqs + config_.max_waiting_seqs;
    if (in_flight_.load() + request.num_sequences() > limit)
      throw ApiError(503, "the server is at capacity (" + std::to_string(in_flight_.load()) + " sequences in flight, limit " +
                              std::to_string(limit) + "); retry later",
                     "service_unavailable", "", "server_overloaded");
    auto generation = std::make_unique<Generation>(*served->model.engine, request, metrics_, in_flight_,
                                                   served->model.speculation);
    const bool with_logprobs = request.top_logprobs >= 0;
    const ResponseHeader header = make_response_header(endpoint, request.model);

    if (!request.stream) {
      while (!generation->done()) {
        if (force_abort_) generation->abort_all();
        generation->poll(kPollMilliseconds);
      }
      for (const SequenceState& s : generation->sequences()) {
        if (!s.error.empty()) throw ApiError(400, s.error, "invalid_request_error");
        if (s.aborted) throw ApiError(503, "the request was aborted: the server is shutting down", "service_unavailable");
      }
      send_json(res, 200, completion_response(header, *generation, *served->model.tokenizer, with_logprobs, request.chat_output));
      return;
    }

    auto state = std::make_shared<StreamState>();
    state->generation = std::move(generation);
    state->keep_alive = served;
    state->header = header;
    state->tokenizer = served->model.tokenizer;
    state->with_logprobs = with_logprobs;
    state->include_usage = request.include_usage;
    state->text_offsets.assign(static_cast<size_t>(request.num_sequences()), 0);
    if (request.chat_output) {
      for (int64_t i = 0; i < request.num_sequences(); ++i)
        state->parsers.emplace_back(chat_output_for_choice(*request.chat_output, static_cast<int>(i)));
      state->called_tools.assign(state->parsers.size(), false);
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, state](size_t, httplib::DataSink& sink) {
          try {
            return stream_events(*state, sink, force_abort_);
          } catch (const std::exception&) {  // never let an exception escape into httplib's writer
            state->generation->abort_all();
            return false;
          }
        },
        [state](bool) { state->generation.reset(); });
  });
}

}  // namespace nucleus::server
