// A `nucleus serve` child process on a free loopback port, for commands that need a server to talk
// to (bench serve without --url). The child is stopped with SIGTERM (graceful shutdown) when the
// object goes away.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace nucleus::cli {

class ServerProcess {
 public:
  // Starts this executable as `serve --host 127.0.0.1 --port P <serve_args>` and waits (up to
  // `ready_seconds`) until GET /health answers 200. Throws Error when it exits or never gets ready.
  ServerProcess(const std::vector<std::string>& serve_args, double ready_seconds);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace nucleus::cli
