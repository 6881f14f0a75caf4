// A small HTTP/1.1 server: one thread per connection, keep-alive, bodies
// sent with Content-Length or chunked, one writev per chunk (or, over TLS,
// one TLS record per 16 KiB). It serves `kcache serve` and the tests'
// scripted servers.
//
// Thread-safety: Start and Stop from one thread; handlers run concurrently,
// one per connection, and must be thread-safe.

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_HTTP_SERVER_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "kcache/status_or.h"

struct ssl_st;
struct ssl_ctx_st;

namespace kcache::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded
  // Query parameters in order, percent-decoded ('+' is a space).
  std::vector<std::pair<std::string, std::string>> query;
  Headers headers;
  std::string body;

  // Case-insensitive; "" when absent.
  std::string Header(std::string_view name) const;
  // The last value of `name`, if present.
  std::optional<std::string> Query(std::string_view name) const;
};

// Writes one response. A response is either whole (Send) or a chunked
// stream (Begin, Write..., End). Every call returns false once the peer is
// gone; the handler should then return.
class ResponseWriter {
 public:
  // `ssl`: the connection's TLS session, or null for plain TCP.
  ResponseWriter(int fd, const std::atomic<bool>* stopping, ssl_st* ssl = nullptr)
      : fd_(fd), stopping_(stopping), ssl_(ssl) {}

  bool Send(int status, const Headers& headers, std::string_view body);
  bool Begin(int status, const Headers& headers);
  // One chunk made of `pieces`, sent with as few system calls as the
  // kernel allows (an empty chunk would end the body and is skipped).
  bool Write(std::span<const std::string_view> pieces);
  bool Write(std::string_view data) { return Write(std::span<const std::string_view>(&data, 1)); }
  bool End();
  // Ends the connection now, leaving any response in progress incomplete
  // (a stream cut mid-way).
  void Cut();

  // Limits what the rest of this response sends to `bytes_per_second`
  // (0: no limit).
  void SetRateLimit(int64_t bytes_per_second) { rate_limit_ = bytes_per_second; }

  // True once the peer has closed its side or the server is stopping.
  bool PeerGone() const;

  bool started() const { return started_; }
  bool finished() const { return finished_; }
  bool cut() const { return cut_; }

 private:
  bool Head(int status, const Headers& headers, const std::string* length);
  bool SendAll(std::span<const std::string_view> pieces);

  int fd_;
  const std::atomic<bool>* stopping_;
  ssl_st* ssl_;
  bool started_ = false;
  bool finished_ = false;
  bool chunked_ = false;
  bool cut_ = false;
  bool broken_ = false;
  int64_t rate_limit_ = 0;
  int64_t rate_sent_ = 0;  // bytes sent under the rate limit
  std::chrono::steady_clock::time_point rate_start_;
};

using Handler = std::function<void(const Request&, ResponseWriter&)>;

// Serving over TLS (1.2 or later): the server's certificate chain and its
// private key, both PEM files.
struct TlsFiles {
  std::string cert_file;
  std::string key_file;
};

class Server {
 public:
  // Listens on `host_port` ("127.0.0.1:8080", "[::1]:0", "localhost:0";
  // port 0 picks a free one) or on a unix socket ("unix:/run/kcache.sock",
  // mode 0600, removed when the server is destroyed), over TLS when `tls` is
  // given.
  // InvalidArgument for a malformed address or unusable certificate or key
  // (naming the file), Unavailable when it cannot be bound.
  static StatusOr<std::unique_ptr<Server>> Start(std::string_view host_port, Handler handler,
                                                 const std::optional<TlsFiles>& tls = {});
  ~Server();

  // "http://HOST:PORT" (or https) with the bound port; "unix:PATH".
  std::string url() const { return url_; }
  int port() const { return port_; }

  // Stops accepting, ends every connection and waits for the handlers to
  // return. Handlers that wait on something of their own must be woken by
  // their owner first. Idempotent.
  void Stop();

  const std::atomic<bool>* stopping() const { return &stopping_; }

 private:
  struct Connection {
    int fd;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  Server(int listen_fd, int port, std::string url, Handler handler, ssl_ctx_st* tls);
  void Accept();
  void Serve(Connection* conn);

  const int listen_fd_;
  ssl_ctx_st* const tls_;  // owned; null for plain TCP
  std::string unix_path_;  // set for a unix socket
  const int port_;
  const std::string url_;
  const Handler handler_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::list<Connection> connections_;
};

// Percent-decodes `s`; '+' becomes a space when `plus_is_space`.
std::string PercentDecode(std::string_view s, bool plus_is_space);

// The standard reason phrase of an HTTP status code ("Not Found").
std::string_view ReasonPhrase(int status);

}  // namespace kcache::http

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_HTTP_SERVER_H_
