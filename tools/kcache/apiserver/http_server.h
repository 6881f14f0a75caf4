// SPDX-License-Identifier: Apache-2.0

// A small HTTP/1.1 server: a fiber or a thread per connection (at most
// ServerOptions::max_connections of them), keep-alive, bodies sent with
// Content-Length or chunked, one writev per chunk (or, over TLS, one TLS
// record per 16 KiB). Sockets are non-blocking and every wait on one goes
// through exec::WaitFd, so a connection served on a fiber holds no thread
// while it waits. Every wait on a client is bounded: the head, the body, the
// wait for the next request and a write that makes no progress each have a
// timeout. It serves `kcache serve` and the tests' scripted servers.
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
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "exec/fiber.h"
#include "kcache/status_or.h"

struct ssl_st;
struct ssl_ctx_st;

namespace kcache::serve::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded
  // Query parameters in order, percent-decoded ('+' is a space).
  std::vector<std::pair<std::string, std::string>> query;
  Headers headers;
  std::string body;
  // The client's address ("127.0.0.1", "::1"), or "unix" on a unix socket.
  std::string peer;

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
  // `ssl`: the connection's TLS session, or null for plain TCP. A write
  // that can send nothing for `write_timeout`, or one under way when `stop`
  // is requested, fails.
  ResponseWriter(int fd, ssl_st* ssl, std::chrono::milliseconds write_timeout, std::stop_token stop)
      : fd_(fd), ssl_(ssl), write_timeout_(write_timeout), stop_(std::move(stop)) {}

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
  ssl_st* ssl_;
  std::chrono::milliseconds write_timeout_;
  std::stop_token stop_;
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

struct ServerOptions {
  // Serve HTTPS with these files; plain HTTP when unset.
  std::optional<TlsFiles> tls;
  // Connections served at once. One more is answered 429 with Retry-After
  // (kube-apiserver's answer to too many requests in flight) and closed; over
  // TLS it is closed unanswered, as no handshake is spent on it.
  size_t max_connections = 2048;
  // A request's head must be complete within header_timeout of its first
  // byte, and a connection's first byte must come within header_timeout of
  // its opening; a body must be complete within body_timeout of its head. A
  // client sending a byte at a time holds a thread no longer.
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds body_timeout{std::chrono::seconds(30)};
  // A kept-alive connection with no request in progress is closed after
  // this long.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(90)};
  // A write that can send nothing for this long (a client that stopped
  // reading, its socket buffers full) ends the connection.
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
  // Serve each connection (and accept them) on a fiber (exec/fiber.h)
  // instead of a thread of its own: a connection then costs the pages its
  // fiber's stack touches, not a thread. The handler must then keep the
  // fibers' rule: wait only on exec::CondVar, exec::SleepUntil or the
  // ResponseWriter, and hold no lock across such a wait.
  bool fibers = false;
};

class Server {
 public:
  // Listens on `host_port` ("127.0.0.1:8080", "[::1]:0", "localhost:0";
  // port 0 picks a free one) or on a unix socket ("unix:/run/kcache.sock",
  // mode 0600, removed when the server is destroyed).
  // InvalidArgument for a malformed address, unusable certificate or key
  // (naming the file) or a zero limit, Unavailable when it cannot be bound.
  static StatusOr<std::unique_ptr<Server>> Start(std::string_view host_port, Handler handler,
                                                 const ServerOptions& options = {});
  ~Server();

  // "http://HOST:PORT" (or https) with the bound port; "unix:PATH".
  std::string url() const { return url_; }
  int port() const { return port_; }

  // Stops accepting, ends every connection and waits for the handlers to
  // return. Handlers that wait on something of their own must be woken by
  // their owner first. Idempotent.
  void Stop();

 private:
  struct Connection {
    int fd;
    std::thread thread;                        // without ServerOptions::fibers
    std::shared_ptr<exec::FiberHandle> fiber;  // with it
    std::atomic<bool> done{false};
    void Join();
  };
  Server(int listen_fd, int port, std::string url, Handler handler, ssl_ctx_st* tls,
         const ServerOptions& options);
  // Runs `fn` on a fiber or a thread of `c`'s, as options_.fibers says.
  void Launch(Connection* c, std::function<void()> fn);
  void Accept();
  void Serve(Connection* conn);
  class Inbound;
  // What a connection does after a request.
  enum class Next {
    kServe,  // serve the next request
    kClose,  // end the connection (with TLS's close_notify)
    kDrop,   // end it without close_notify: the peer left, or sent no head in time
  };
  // Reads one request, hands it to the handler and ends its response.
  Next ServeRequest(Inbound& inbound, const std::string& peer, bool first, ssl_st* ssl,
                    const std::stop_token& stop);
  // A TLS connection's handshake, due within header_timeout; false if it failed.
  bool Handshake(ssl_st* ssl, int fd, const std::stop_token& stop) const;
  // Answers a connection beyond max_connections, and closes it.
  void Refuse(int fd);

  const int listen_fd_;
  const ServerOptions options_;
  ssl_ctx_st* const tls_;  // owned; null for plain TCP
  std::string unix_path_;  // set for a unix socket
  const int port_;
  const std::string url_;
  const Handler handler_;
  std::stop_source stop_;
  std::atomic<bool> stopped_{false};  // Stop has run
  Connection acceptor_;               // its fd is the listening socket's
  std::mutex mu_;
  std::list<Connection> connections_;
};

// Parses a request head (request line and headers, without the blank line
// that ends it) into `req`'s method, target, path, query and headers. False
// for a malformed head. Exposed for the fuzz target.
bool ParseHead(std::string_view head, Request* req);

// Percent-decodes `s`; '+' becomes a space when `plus_is_space`.
std::string PercentDecode(std::string_view s, bool plus_is_space);

// The standard reason phrase of an HTTP status code ("Not Found").
std::string_view ReasonPhrase(int status);

}  // namespace kcache::serve::http

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_HTTP_SERVER_H_
