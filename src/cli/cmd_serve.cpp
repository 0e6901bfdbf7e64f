// nucleus serve: the OpenAI-compatible HTTP server (server/http_server.h) over the continuous-batching
// engine, plus the explainer UI at / (explain/explainer.h, on its own copy of the model). The
// listener is bound first, so /health answers 503 while the model loads; SIGINT/SIGTERM
// stop accepting work, give in-flight requests --shutdown-timeout seconds, abort the rest and exit 0.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "core/error.h"
#include "engine/async_engine.h"
#include "cli/speculation_flags.h"
#include "explain/explainer.h"
#include "server/http_server.h"
#include "tokenizer/chat_template.h"

namespace nucleus::cli {

namespace {

struct ServeOptions {
  ModelSource source;
  server::ServerConfig server;
  int64_t kv_cache_mib = 256;
  std::string kv_type = "f32";
  int64_t max_model_len = 0;
  int64_t max_num_batched_tokens = 512;
  std::string chat_template;
  std::string tool_call_parser = "auto";
  std::string reasoning_format = "deepseek";
  SpeculationFlags speculation;  // --draft / --spec / --gamma: completions and the explainer's panel
  std::string speed_model = "auto";  // the explainer's speed panels' model (explain/explainer.h)
  int n_threads = 0;
};

// The file scripts/setup.sh writes with `nucleus synth` (random weights, big enough to be memory-bound).
constexpr const char* kDefaultSpeedModel = "models/speed-model.gguf";

// --speed-model: "auto" is the setup script's file when it exists (else the served model), "served"
// the served model, anything else a model file.
std::string speed_model_path(const std::string& flag) {
  if (flag == "served") return "";
  if (flag != "auto") return flag;
  return std::filesystem::exists(kDefaultSpeedModel) ? kDefaultSpeedModel : "";
}

std::string model_name_from_path(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) name.resize(name.size() - 5);
  return name;
}

int run_serve(const ServeOptions& options) {
  // Signals are taken by one thread with sigwait(); every other thread (httplib's pool, the engine
  // loop) inherits the blocked mask. A dead client must not kill the process: SIGPIPE is ignored.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const KvType kv_type = parse_kv_type(options.kv_type);  // a bad value fails before anything starts

  server::ServerConfig config = options.server;
  if (config.served_model_name.empty()) config.served_model_name = model_name_from_path(options.source.model_path);
  server::HttpServer http(config);
  const int port = http.bind();
  std::fprintf(stderr, "nucleus serve: listening on http://%s:%d (loading %s)\n", config.host.c_str(), port,
               options.source.model_path.c_str());
  std::thread listener([&] { http.serve(); });
  std::atomic<bool> listener_done{false};
  std::thread signal_waiter([&] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (listener_done) return;  // our own wake-up call below
    std::fprintf(stderr, "nucleus serve: signal %d, shutting down\n", signal_number);
    http.shutdown();
  });
  auto stop_threads = [&] {
    listener.join();  // returns once shutdown() has stopped the listener
    listener_done = true;
    pthread_kill(signal_waiter.native_handle(), SIGTERM);  // wakes sigwait if no signal came
    signal_waiter.join();
  };

  LoadedModel loaded;
  std::unique_ptr<ProposerFactory> proposers;  // outlives the engine: its requests' proposers use the draft
  std::mutex proposers_mutex;                  // HTTP threads make proposers concurrently
  std::unique_ptr<AsyncEngine> engine;
  std::unique_ptr<explain::Explainer> explainer;
  try {
    ModelSource source = options.source;
    source.n_ctx = options.max_model_len;  // the context the model is loaded for (Phi-3 picks its rope factors by it)
    loaded = load_model(source);
    EngineConfig engine_config;
    engine_config.kv_cache_bytes = options.kv_cache_mib << 20;
    engine_config.kv_type = kv_type;
    engine_config.check_memory = source.check_memory;
    engine_config.max_num_seqs = config.max_num_seqs;
    engine_config.max_model_len = options.max_model_len;
    engine_config.max_num_batched_tokens = options.max_num_batched_tokens;
    engine_config.n_threads = options.n_threads > 0 ? options.n_threads : default_threads();
    auto llm = std::make_unique<LLMEngine>(*loaded.model, loaded.tokenizer.get(), engine_config);
    if (!llm->prefix_caching_off_reason().empty())
      std::fprintf(stderr, "nucleus serve: prefix caching is off: %s\n", llm->prefix_caching_off_reason().c_str());
    const int64_t max_model_len = llm->max_model_len();
    engine = std::make_unique<AsyncEngine>(std::move(llm));

    server::Speculation speculation;  // made before the explainer, which shares the factory's draft model
    if (options.speculation.enabled()) {
      proposers = std::make_unique<ProposerFactory>(options.speculation, loaded);
      speculation.gamma = options.speculation.gamma;
      speculation.make_proposer = [&proposers, &proposers_mutex, threads = engine_config.n_threads](const SamplingParams& s) {
        std::lock_guard lock(proposers_mutex);
        return proposers->make(s, threads);
      };
      std::fprintf(stderr, "nucleus serve: speculative decoding with %s, gamma %d\n", proposers->describe().c_str(),
                   options.speculation.gamma);
    }
    explain::ExplainerConfig explainer_config;
    explainer_config.source = options.source;
    explainer_config.draft_path = options.speculation.draft_path;
    explainer_config.n_threads = engine_config.n_threads;
    explainer_config.weights_from = loaded.model.get();
    explainer_config.draft_weights_from = proposers ? proposers->draft_model() : nullptr;  // one draft in memory
    explainer_config.speed_model_path = speed_model_path(options.speed_model);
    explainer = std::make_unique<explain::Explainer>(explainer_config);
    const explain::SpeedModelInfo& speed = explainer->speed_model();
    std::fprintf(stderr, "nucleus serve: explainer speed panels on %s (%.0f MB of %s weights)\n", speed.path.c_str(),
                 speed.weight_bytes / 1e6, speed.weight_type.c_str());

    server::ServedModel served;
    served.engine = engine.get();
    served.explainer = explainer.get();
    served.tokenizer = loaded.tokenizer.get();
    served.name = config.served_model_name;
    served.max_model_len = max_model_len;
    served.speculation = std::move(speculation);
    try {
      served.chat_template = chat_template_for_model(loaded.model->file(), *loaded.tokenizer, options.chat_template);
    } catch (const Error& e) {
      if (!options.chat_template.empty()) throw;  // a bad --chat-template is the user's error
      served.chat_template_error = e.what();
      std::fprintf(stderr, "nucleus serve: no chat template (%s); /v1/chat/completions will refuse requests\n", e.what());
    }
    if (options.tool_call_parser != "auto") {
      served.tool_call_format = server::tool_call_format_from_name(options.tool_call_parser);
      if (!served.tool_call_format)
        throw Error("--tool-call-parser: unknown format '" + options.tool_call_parser + "' (auto, " +
                    server::tool_call_format_names() + ")");
    }
    if (options.reasoning_format != "deepseek" && options.reasoning_format != "none")
      throw Error("--reasoning-format: must be deepseek or none, got '" + options.reasoning_format + "'");
    served.reasoning_split = options.reasoning_format == "deepseek";
    http.attach(std::move(served));
  } catch (...) {
    http.shutdown();
    stop_threads();
    throw;
  }
  std::fprintf(stderr, "nucleus serve: model '%s' ready (context %lld tokens)\n", config.served_model_name.c_str(),
               static_cast<long long>(engine->engine().max_model_len()));
  stop_threads();  // returns once a signal has shut the server down
  engine.reset();  // the engine loop stops before the model it runs goes away
  explainer.reset();
  std::fprintf(stderr, "nucleus serve: stopped\n");
  return 0;
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* command = app.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, streaming, metrics) and the explainer UI at /");
  add_model_flags(*command, options->source);
  command->add_option("--host", options->server.host, "address to bind (default: loopback only)");
  command->add_option("--port", options->server.port, "port to listen on (0: any free port)")->check(CLI::Range(0, 65535));
  command->add_option("--api-key", options->server.api_key, "require 'Authorization: Bearer KEY' on /v1/*");
  command->add_option("--served-model-name", options->server.served_model_name, "model name clients must use (default: file name)");
  command->add_option("--max-num-seqs", options->server.max_num_seqs, "sequences running at once")->check(CLI::Range(1, 4096));
  command->add_option("--max-waiting-seqs", options->server.max_waiting_seqs, "sequences queued beyond those before 503")
      ->check(CLI::Range(0, 1 << 20));
  command->add_option("--kv-cache-mem", options->kv_cache_mib, "KV cache pool size in MiB")->check(CLI::Range(1, 1 << 20));
  command->add_option("--kv-type", options->kv_type, "KV cache element type: f32 or f16 (f16: twice the blocks per MiB)");
  command->add_option("--max-model-len", options->max_model_len, "context length (0: the model's)")->check(CLI::Range(0, 1 << 24));
  command->add_option("--max-num-batched-tokens", options->max_num_batched_tokens, "token budget of one engine step")
      ->check(CLI::Range(1, 1 << 20));
  command->add_option("--max-body-bytes", options->server.max_body_bytes, "larger request bodies get 413");
  command->add_option("--replica-id", options->server.replica_id,
                      "name of this replica behind a balancer, sent as the x-nucleus-replica response header");
  command->add_option("--request-timeout", options->server.request_read_seconds,
                      "seconds a request's line, headers and body may take to arrive (slow clients are cut off)")
      ->check(CLI::Range(0.1, 86400.0));
  command->add_option("--shutdown-timeout", options->server.shutdown_deadline_seconds,
                      "seconds in-flight requests get on SIGINT/SIGTERM before they are aborted");
  command->add_option("--chat-template", options->chat_template, "chat template family: " + chat_template_names());
  command->add_option("--tool-call-parser", options->tool_call_parser,
                      "how tool calls are written and read: auto (from the chat template) or " + server::tool_call_format_names());
  command->add_option("--reasoning-format", options->reasoning_format,
                      "deepseek: a thinking model's <think> block goes to reasoning_content; none: it stays in content");
  command->add_option("-t,--threads", options->n_threads, "compute threads (default: all cores)");
  command->add_option("--speed-model", options->speed_model,
                      std::string("the explainer's roofline, speculative and batching panels' model: a file, 'served', or 'auto' (") +
                          kDefaultSpeedModel + " when it exists, written by scripts/setup.sh; else the served model)");
  // Speculative decoding for every completion (and the explainer's panel's draft model).
  add_speculation_flags(*command, options->speculation);
  return [options] { return run_serve(*options); };
}

}  // namespace nucleus::cli
