// One HTTP connection's socket as cpp-httplib reads and writes it, with a deadline per request.
//
// httplib 0.11 bounds each recv() by its read timeout (5 s) but not a whole request, so a client
// that trickles a header byte every few seconds (slowloris) held a worker thread for as long as it
// liked. Here every request's line, headers and body must arrive within `request_read_seconds` of
// the request's start; past it reads fail, httplib answers 400 (or, mid-body, the route its own
// error) and the connection is closed. Writing the response ends the request's reading phase, so a
// long stream is not cut by it. Everything else (per-read and per-write timeouts, keep-alive,
// detecting a peer that hung up) is what httplib's own socket stream does.
#pragma once
#include <httplib.h>
#include <poll.h>

#include <chrono>
#include <functional>

namespace nucleus::server {

struct ConnectionTimeouts {
  std::chrono::milliseconds read{5000};        // one recv() (httplib's read timeout)
  std::chrono::milliseconds write{5000};       // one send() (httplib's write timeout)
  std::chrono::milliseconds keep_alive{5000};  // an idle keep-alive connection
  std::chrono::milliseconds request{30000};    // a whole request's line, headers and body
  size_t max_requests = 5;                     // per connection (httplib's keep-alive max count)
};

class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int sock, const ConnectionTimeouts& timeouts) : sock_(sock), timeouts_(timeouts) {}

  // A new request starts: its deadline is now + timeouts.request until the first byte written.
  void start_request();
  bool past_deadline() const;
  // Whether a byte can be read within `limit` (or the peer hung up): waiting for the next request.
  bool readable_within(std::chrono::milliseconds limit) const { return offset_ < buffered_ || wait(POLLIN, limit); }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return sock_; }

 private:
  using Clock = std::chrono::steady_clock;
  // Waits until the socket can be read (POLLIN) or written (POLLOUT), at most `limit`.
  bool wait(short events, std::chrono::milliseconds limit) const;

  int sock_;
  ConnectionTimeouts timeouts_;
  Clock::time_point deadline_ = Clock::time_point::max();  // max: the request is being answered
  char buffer_[4096];  // httplib's line reader reads a byte at a time: one recv() per 4 KiB
  size_t buffered_ = 0, offset_ = 0;
};

// Serves one accepted connection to the end: waits for each request (at most timeouts.keep_alive
// idle), runs `process(stream, close_connection, connection_closed)` on it (httplib's
// process_request), and closes the socket. `stopping` ends the loop between requests.
void serve_connection(int sock, const ConnectionTimeouts& timeouts, const std::function<bool()>& stopping,
                      const std::function<bool(httplib::Stream&, bool, bool&)>& process);

}  // namespace nucleus::server
