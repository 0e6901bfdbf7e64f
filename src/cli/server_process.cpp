#include "cli/server_process.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/error.h"

extern char** environ;

namespace nucleus::cli {

namespace {

// A port the kernel just handed out for loopback; free again once the probe socket closes.
int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error("bench serve: cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0;
  ::close(fd);
  if (!ok) throw Error("bench serve: cannot find a free loopback port");
  return ntohs(addr.sin_port);
}

}  // namespace

ServerProcess::ServerProcess(const std::vector<std::string>& serve_args, double ready_seconds) {
  port_ = pick_free_port();
  std::vector<std::string> args = {"/proc/self/exe", "serve", "--host", "127.0.0.1", "--port", std::to_string(port_)};
  args.insert(args.end(), serve_args.begin(), serve_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    pid_ = -1;
    throw Error("bench serve: cannot start the server process");
  }
  httplib::Client client(base_url());
  client.set_connection_timeout(1, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(ready_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw Error("bench serve: the server exited before it was ready (see its messages above)");
    }
    if (auto r = client.Get("/health"); r && r->status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
  throw Error("bench serve: the server was not ready after " + std::to_string(ready_seconds) + " s");
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

}  // namespace nucleus::cli
