#include "server/request_deadline.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace nucleus::server {

namespace {

void socket_address(int sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  const int r = peer ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&address), &length)
                     : ::getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length);
  if (r != 0) return;
  char host[NI_MAXHOST], service[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof host, service, sizeof service,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return;
  ip = host;
  port = std::atoi(service);
}

}  // namespace

void DeadlineStream::start_request() { deadline_ = Clock::now() + timeouts_.request; }

bool DeadlineStream::past_deadline() const { return Clock::now() >= deadline_; }

bool DeadlineStream::wait(short events, std::chrono::milliseconds limit) const {
  pollfd p{sock_, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, limit.count())));
  } while (r < 0 && errno == EINTR);
  return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
}

bool DeadlineStream::is_readable() const {
  if (offset_ < buffered_) return true;
  auto limit = timeouts_.read;
  if (deadline_ != Clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    limit = std::min(limit, std::max(left, std::chrono::milliseconds(0)));
  }
  return wait(POLLIN, limit);
}

bool DeadlineStream::is_writable() const {
  if (!wait(POLLOUT, timeouts_.write)) return false;
  // Writable, but has the peer hung up? A closed peer reads as 0 bytes (pending data: still alive).
  pollfd p{sock_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return true;
  char byte;
  return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

ssize_t DeadlineStream::read(char* ptr, size_t size) {
  if (offset_ < buffered_) {
    const size_t n = std::min(size, buffered_ - offset_);
    std::memcpy(ptr, buffer_ + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }
  if (past_deadline() || !is_readable() || past_deadline()) return -1;
  ssize_t n;
  if (size < sizeof buffer_) {  // small reads (the line reader's bytes) go through the buffer
    do n = ::recv(sock_, buffer_, sizeof buffer_, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    buffered_ = static_cast<size_t>(n);
    offset_ = std::min(size, buffered_);
    std::memcpy(ptr, buffer_, offset_);
    return static_cast<ssize_t>(offset_);
  }
  do n = ::recv(sock_, ptr, size, 0);
  while (n < 0 && errno == EINTR);
  return n;
}

ssize_t DeadlineStream::write(const char* ptr, size_t size) {
  deadline_ = Clock::time_point::max();  // answering: the request has been read
  if (!is_writable()) return -1;
  ssize_t n;
  do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

void DeadlineStream::get_remote_ip_and_port(std::string& ip, int& port) const { socket_address(sock_, true, ip, port); }

void DeadlineStream::get_local_ip_and_port(std::string& ip, int& port) const { socket_address(sock_, false, ip, port); }

void serve_connection(int sock, const ConnectionTimeouts& timeouts, const std::function<bool()>& stopping,
                      const std::function<bool(httplib::Stream&, bool, bool&)>& process) {
  DeadlineStream stream(sock, timeouts);
  const auto slice = std::chrono::milliseconds(100);  // how often an idle connection checks `stopping`
  for (size_t left = std::max<size_t>(1, timeouts.max_requests); left > 0; --left) {
    // Idle until the next request's first byte, the keep-alive timeout, or the server stopping.
    bool ready = false;
    for (auto waited = std::chrono::milliseconds(0); !ready && waited < timeouts.keep_alive && !stopping(); waited += slice)
      ready = stream.readable_within(slice);
    if (!ready) break;
    stream.start_request();
    bool connection_closed = false;
    if (!process(stream, left == 1, connection_closed) || connection_closed) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

}  // namespace nucleus::server
