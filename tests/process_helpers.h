// Child processes for the tests that run nucleus (or a cluster of it) as a user would: free loopback
// ports, spawning with output to a log file, waiting for an exit with a deadline.
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "test_helpers.h"

namespace nucleus::test {

// A loopback port nobody listens on right now (0 when `port` is given and taken).
inline int free_port(int port = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return 0;
  }
  socklen_t length = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A port P with P..P+count-1 all free (for a balancer and its replicas). Taken below the kernel's
// ephemeral range (32768 and up on Linux), where free_port() and every client socket get theirs:
// a range taken from there could be handed, port by port, to a test running in parallel.
inline int free_port_range(int count) {
  uint64_t state = static_cast<uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^
                   static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int attempt = 0; attempt < 200; ++attempt) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int base = 20000 + static_cast<int>((state >> 33) % static_cast<uint64_t>(12000 - count));
    if (free_port(base) == 0) continue;
    bool all = true;
    for (int i = 1; i < count && all; ++i) all = free_port(base + i) != 0;
    if (all) return base;
  }
  return 0;
}

// Starts `argv` (argv[0] a path) with stdout and stderr to `log_path`, in its own process group
// (so a script and everything it starts can be signalled at once); returns the child's pid.
inline pid_t spawn_process(std::vector<std::string> argv_strings, const std::string& log_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(log, 1);
    ::dup2(log, 2);
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Starts `nucleus serve ARGS` with its output to `log_path`.
inline pid_t spawn_serve(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<std::string> argv = {nucleus_binary(), "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_process(argv, log_path);
}

// Waits for the child to exit: its exit code, 128 + signal, or -1 on timeout (it is then killed).
inline int wait_exit(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

}  // namespace nucleus::test
