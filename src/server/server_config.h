// What `nucleus serve` is told at start-up: where to listen, who may call, how much to accept.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nucleus::server {

struct ServerConfig {
  std::string host = "127.0.0.1";   // loopback unless told otherwise
  int port = 8080;                  // 0 → any free port (tests)
  std::string api_key;              // empty → no authentication; else /v1/* needs "Authorization: Bearer KEY"
  std::string served_model_name;    // the only name /v1/* accepts in "model" (empty field → this one)
  size_t max_body_bytes = 1 << 20;  // larger request bodies get 413
  // Sequences admitted at once: engine max_num_seqs running + this many waiting. Beyond it new
  // requests get 503 with Retry-After, so a burst cannot queue unbounded work.
  int64_t max_num_seqs = 64;
  int64_t max_waiting_seqs = 256;
  int http_threads = 0;             // 0 → 2·(max_num_seqs) + 16: every stream holds one thread
  double shutdown_deadline_seconds = 10.0;  // SIGINT/SIGTERM: in-flight requests get this long
  // A request's line, headers and body must all arrive within this (slowloris: a client trickling
  // a byte every few seconds); past it the connection gets 400 and is closed (request_deadline.h).
  double request_read_seconds = 30.0;
  int retry_after_seconds = 1;
  // serve --replica-id: sent as the "x-nucleus-replica" header of every response (which replica
  // behind a balancer answered; empty: no header).
  std::string replica_id;
};

}  // namespace nucleus::server
