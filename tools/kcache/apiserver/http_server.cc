// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "exec/poller.h"

namespace kcache::serve::http {
namespace {

constexpr size_t kMaxHeaderBytes = 64 << 10;
constexpr size_t kMaxBodyBytes = 16 << 20;
// Connections waiting to be accepted (the kernel caps it at
// net.core.somaxconn): thousands of watchers may connect at once.
constexpr int kBacklog = 4096;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool ParseHead(std::string_view head, Request* req) {
  size_t line_end = head.find("\r\n");
  std::string_view first = head.substr(0, line_end);
  size_t sp1 = first.find(' ');
  size_t sp2 = first.rfind(' ');
  // METHOD SP TARGET SP VERSION, with neither the method nor the target empty.
  if (sp1 == std::string_view::npos || sp1 == 0 || sp2 <= sp1 + 1) return false;
  req->method = std::string(first.substr(0, sp1));
  req->target = std::string(first.substr(sp1 + 1, sp2 - sp1 - 1));
  if (!first.substr(sp2 + 1).starts_with("HTTP/1.")) return false;
  std::string_view target = req->target;
  size_t q = target.find('?');
  req->path = PercentDecode(target.substr(0, q), false);
  if (q != std::string_view::npos) {
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
      size_t amp = query.find('&');
      std::string_view pair = query.substr(0, amp);
      if (!pair.empty()) {
        size_t eq = pair.find('=');
        req->query.emplace_back(
            PercentDecode(pair.substr(0, eq), true),
            eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true));
      }
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  while (line_end != std::string_view::npos && line_end + 2 < head.size()) {
    size_t next = head.find("\r\n", line_end + 2);
    std::string_view line =
        head.substr(line_end + 2,
                    next == std::string_view::npos ? std::string_view::npos : next - line_end - 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    req->headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
    line_end = next;
  }
  return true;
}

namespace {

// OpenSSL's queued errors as one line.
std::string TlsError() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown TLS error" : out;
}

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready or hung up; false at `deadline` or on `stop`.
bool Await(int fd, exec::FdWait what, Clock::time_point deadline, std::stop_token stop) {
  return exec::WaitFd(fd, what, deadline, std::move(stop)) == exec::FdReady::kReady;
}

// After an OpenSSL call on a non-blocking socket returned `rc`: waits for
// what the session asks for and returns true to retry, or false for an error
// (or the end of the connection, the deadline or `stop`).
bool TlsRetry(SSL* ssl, int rc, int fd, Clock::time_point deadline, std::stop_token stop) {
  switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
      return Await(fd, exec::FdWait::kReadable, deadline, std::move(stop));
    case SSL_ERROR_WANT_WRITE:
      return Await(fd, exec::FdWait::kWritable, deadline, std::move(stop));
    default:
      ERR_clear_error();
      return false;
  }
}

// Writes all of `data` into the TLS session; false once a write could make
// no progress for `timeout`.
bool TlsWriteAll(SSL* ssl, int fd, std::string_view data, std::chrono::milliseconds timeout,
                 const std::stop_token& stop) {
  while (!data.empty()) {
    ERR_clear_error();
    // Without SSL_MODE_ENABLE_PARTIAL_WRITE a write is whole or retried
    // with the same arguments.
    const int n =
        SSL_write(ssl, data.data(), static_cast<int>(std::min<size_t>(data.size(), INT_MAX)));
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (!TlsRetry(ssl, n, fd, Clock::now() + timeout, stop)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 413:
      return "Request Entity Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

std::string Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

std::optional<std::string> Request::Query(std::string_view name) const {
  std::optional<std::string> out;
  for (const auto& [k, v] : query) {
    if (k == name) out = v;
  }
  return out;
}

bool ResponseWriter::SendAll(std::span<const std::string_view> pieces) {
  if (broken_) return false;
  if (rate_limit_ > 0) {
    // A trickle: slices of at most a tenth of the per-second budget, each
    // sent once the bytes before it are due at the rate, counted from the
    // response's first byte (a fixed pause per piece would make the rate
    // depend on how the response is cut into pieces).
    const size_t slice = static_cast<size_t>(std::max<int64_t>(1, rate_limit_ / 10));
    if (rate_sent_ == 0) rate_start_ = std::chrono::steady_clock::now();
    for (std::string_view piece : pieces) {
      while (!piece.empty()) {
        if (stop_.stop_requested()) return broken_ = true, false;
        auto due = rate_start_ + std::chrono::microseconds(rate_sent_ * 1'000'000 / rate_limit_);
        const auto now = std::chrono::steady_clock::now();
        if (now - due > std::chrono::milliseconds(100)) {
          // A stream that was idle (a watch between events) earns no burst.
          rate_start_ += now - due;
          due = now;
        }
        if (!exec::SleepUntil(due, stop_)) return broken_ = true, false;
        std::string_view part = piece.substr(0, slice);
        ResponseWriter unlimited(fd_, ssl_, write_timeout_, stop_);
        if (!unlimited.SendAll(std::span<const std::string_view>(&part, 1)))
          return broken_ = true, false;
        piece.remove_prefix(part.size());
        rate_sent_ += static_cast<int64_t>(part.size());
      }
    }
    return true;
  }
  if (ssl_) {
    // Pieces gathered into records of up to 16 KiB (TLS's largest).
    constexpr size_t kRecord = 16 << 10;
    std::string record;
    for (std::string_view piece : pieces) {
      if (record.size() + piece.size() > kRecord && !record.empty()) {
        if (!TlsWriteAll(ssl_, fd_, record, write_timeout_, stop_)) return broken_ = true, false;
        record.clear();
      }
      if (piece.size() >= kRecord) {
        if (!TlsWriteAll(ssl_, fd_, piece, write_timeout_, stop_)) return broken_ = true, false;
      } else {
        record.append(piece);
      }
    }
    if (!record.empty() && !TlsWriteAll(ssl_, fd_, record, write_timeout_, stop_)) {
      return broken_ = true, false;
    }
    return true;
  }
  std::vector<iovec> iov;
  iov.reserve(std::min<size_t>(pieces.size(), IOV_MAX));
  size_t next = 0;
  while (next < pieces.size() || !iov.empty()) {
    while (next < pieces.size() && iov.size() < IOV_MAX) {
      if (!pieces[next].empty()) {
        iov.push_back({const_cast<char*>(pieces[next].data()), pieces[next].size()});
      }
      ++next;
    }
    if (iov.empty()) break;
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = iov.size();
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A write that can make no progress for write_timeout (a client that
      // stopped reading) ends the connection.
      if (!Await(fd_, exec::FdWait::kWritable, Clock::now() + write_timeout_, stop_))
        return broken_ = true, false;
      continue;
    }
    if (n <= 0) return broken_ = true, false;
    // Drop what went out.
    size_t sent = static_cast<size_t>(n);
    size_t done = 0;
    while (done < iov.size() && sent >= iov[done].iov_len) sent -= iov[done++].iov_len;
    iov.erase(iov.begin(), iov.begin() + static_cast<ptrdiff_t>(done));
    if (!iov.empty()) {
      iov[0].iov_base = static_cast<char*>(iov[0].iov_base) + sent;
      iov[0].iov_len -= sent;
    }
  }
  return true;
}

bool ResponseWriter::Head(int status, const Headers& headers, const std::string* length) {
  std::string head =
      "HTTP/1.1 " + std::to_string(status) + " " + std::string(ReasonPhrase(status)) + "\r\n";
  bool has_type = false;
  for (const auto& [k, v] : headers) {
    head += k + ": " + v + "\r\n";
    has_type |= EqualsIgnoreCase(k, "content-type");
  }
  if (!has_type) head += "Content-Type: application/json\r\n";
  head += length ? "Content-Length: " + *length + "\r\n\r\n" : "Transfer-Encoding: chunked\r\n\r\n";
  started_ = true;
  std::string_view piece = head;
  return SendAll(std::span<const std::string_view>(&piece, 1));
}

bool ResponseWriter::Send(int status, const Headers& headers, std::string_view body) {
  std::string length = std::to_string(body.size());
  if (!Head(status, headers, &length)) return false;
  finished_ = true;
  return SendAll(std::span<const std::string_view>(&body, 1));
}

bool ResponseWriter::Begin(int status, const Headers& headers) {
  chunked_ = true;
  return Head(status, headers, nullptr);
}

bool ResponseWriter::Write(std::span<const std::string_view> pieces) {
  size_t total = 0;
  for (std::string_view p : pieces) total += p.size();
  if (total == 0) return !broken_;
  char size[24];
  int len = std::snprintf(size, sizeof size, "%zx\r\n", total);
  std::vector<std::string_view> all;
  all.reserve(pieces.size() + 2);
  all.emplace_back(size, static_cast<size_t>(len));
  all.insert(all.end(), pieces.begin(), pieces.end());
  all.emplace_back("\r\n");
  return SendAll(all);
}

bool ResponseWriter::End() {
  finished_ = true;
  std::string_view last = "0\r\n\r\n";
  return SendAll(std::span<const std::string_view>(&last, 1));
}

void ResponseWriter::Cut() {
  cut_ = true;
  broken_ = true;
  shutdown(fd_, SHUT_RDWR);
}

bool ResponseWriter::PeerGone() const {
  if (broken_ || stop_.stop_requested()) return true;
  pollfd p{fd_, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

namespace {

// A listening unix socket at `path`, readable and writable by its owner
// only. A stale socket file (a server that did not stop cleanly) is
// replaced; any other file is left alone.
StatusOr<int> ListenUnix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument("unix socket path \"" + path + "\" is empty or too long");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::InvalidArgument("cannot listen on unix:" + path +
                                     ": a file that is not a socket is there");
    }
    unlink(path.c_str());
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable("unix socket: " + std::string(std::strerror(errno)));
  // Created with no permission for others, then opened to the owner: no
  // moment where another user may connect.
  const mode_t old_mask = umask(0177);
  const int bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  umask(old_mask);
  if (bound != 0 || listen(fd, kBacklog) != 0) {
    std::string error = std::strerror(bound != 0 ? bind_errno : errno);
    close(fd);
    return Status::Unavailable("cannot listen on unix:" + path + ": " + error);
  }
  return fd;
}

}  // namespace

StatusOr<std::unique_ptr<Server>> Server::Start(std::string_view host_port, Handler handler,
                                                const ServerOptions& options) {
  const std::optional<TlsFiles>& tls = options.tls;
  if (options.max_connections == 0 || options.header_timeout.count() <= 0 ||
      options.body_timeout.count() <= 0 || options.idle_timeout.count() <= 0 ||
      options.write_timeout.count() <= 0) {
    return Status::InvalidArgument("server limits and timeouts must be positive");
  }
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(nullptr, SSL_CTX_free);
  if (tls) {
    ERR_clear_error();
    ctx.reset(SSL_CTX_new(TLS_server_method()));
    if (!ctx) return Status::Internal("TLS: " + TlsError());
    SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls->cert_file.c_str()) != 1) {
      return Status::InvalidArgument("TLS certificate " + tls->cert_file + ": " + TlsError());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls->key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return Status::InvalidArgument("TLS private key " + tls->key_file + ": " + TlsError());
    }
    if (SSL_CTX_check_private_key(ctx.get()) != 1) {
      return Status::InvalidArgument("TLS private key " + tls->key_file +
                                     " does not match the certificate " + tls->cert_file);
    }
  }
  if (host_port.starts_with("unix:")) {
    const std::string path(host_port.substr(5));
    KCACHE_ASSIGN_OR_RETURN(int fd, ListenUnix(path));
    std::unique_ptr<Server> server(
        new Server(fd, 0, "unix:" + path, std::move(handler), ctx.release(), options));
    server->unix_path_ = path;
    server->Launch(&server->acceptor_, [s = server.get()] { s->Accept(); });
    return server;
  }
  size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == host_port.size()) {
    return Status::InvalidArgument("listen address \"" + std::string(host_port) +
                                   "\" is not HOST:PORT");
  }
  std::string host(host_port.substr(0, colon));
  std::string port(host_port.substr(colon + 1));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      port.size() > 5 || std::stoi(port) > 65535) {
    return Status::InvalidArgument("listen address \"" + std::string(host_port) +
                                   "\": bad port \"" + port + "\"");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
      rc != 0) {
    return Status::InvalidArgument("listen address \"" + std::string(host_port) +
                                   "\": " + gai_strerror(rc));
  }
  int fd = -1;
  std::string error;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, kBacklog) == 0) break;
    error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return Status::Unavailable("cannot listen on " + std::string(host_port) + ": " + error);
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  char name[INET6_ADDRSTRLEN] = {};
  int bound_port = 0;
  std::string url;
  if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, name, sizeof name);
    bound_port = ntohs(a->sin6_port);
    url = (tls ? "https://[" : "http://[") + std::string(name) + "]:" + std::to_string(bound_port);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, name, sizeof name);
    bound_port = ntohs(a->sin_port);
    url = (tls ? "https://" : "http://") + std::string(name) + ":" + std::to_string(bound_port);
  }
  std::unique_ptr<Server> server(
      new Server(fd, bound_port, std::move(url), std::move(handler), ctx.release(), options));
  server->Launch(&server->acceptor_, [s = server.get()] { s->Accept(); });
  return server;
}

Server::Server(int listen_fd, int port, std::string url, Handler handler, SSL_CTX* tls,
               const ServerOptions& options)
    : listen_fd_(listen_fd),
      options_(options),
      tls_(tls),
      port_(port),
      url_(std::move(url)),
      handler_(std::move(handler)) {
  acceptor_.fd = listen_fd;
}

Server::~Server() {
  Stop();
  close(listen_fd_);
  if (!unix_path_.empty()) unlink(unix_path_.c_str());
  if (tls_) SSL_CTX_free(tls_);
}

void Server::Connection::Join() {
  if (thread.joinable()) thread.join();
  if (fiber) fiber->Join();
}

void Server::Launch(Connection* c, std::function<void()> fn) {
  if (options_.fibers) {
    c->fiber = exec::Spawn(std::move(fn));
  } else {
    c->thread = std::thread(std::move(fn));
  }
}

void Server::Stop() {
  if (stopped_.exchange(true)) return;
  stop_.request_stop();  // wakes every wait on a socket, the acceptor's too
  // No longer listening: the address may be bound again at once (the
  // descriptor is closed when the server is destroyed).
  shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.Join();
  std::list<Connection> connections;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Connection& c : connections_) shutdown(c.fd, SHUT_RDWR);
    connections.splice(connections.end(), connections_);
  }
  for (Connection& c : connections) {
    c.Join();
    close(c.fd);
  }
}

void Server::Accept() {
  const std::stop_token stop = stop_.get_token();
  while (!stop.stop_requested()) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        Await(listen_fd_, exec::FdWait::kReadable, Clock::time_point::max(), stop);
      } else if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: wait for connections to end.
        exec::SleepUntil(Clock::now() + std::chrono::milliseconds(50), stop);
      } else if (errno != EINTR && errno != ECONNABORTED) {
        return;
      }
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // The connections that have ended, joined outside the lock (a join may
    // wait for a fiber to finish, and no lock is held across such a wait).
    std::list<Connection> ended;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = connections_.begin(); it != connections_.end();) {
        auto next = std::next(it);
        if (it->done) ended.splice(ended.end(), connections_, it);
        it = next;
      }
      if (stop.stop_requested()) {
        close(fd);
      } else if (connections_.size() >= options_.max_connections) {
        Refuse(fd);
      } else {
        Connection& c = connections_.emplace_back();
        c.fd = fd;
        Launch(&c, [this, conn = &c] { Serve(conn); });
      }
    }
    for (Connection& c : ended) {
      c.Join();
      close(c.fd);
    }
  }
}

void Server::Refuse(int fd) {
  if (!tls_) {
    // kube-apiserver's words for too many requests in flight; client-go
    // retries after Retry-After. Sent without waiting: a client that does
    // not read it loses it.
    static constexpr std::string_view kBody =
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
        R"("message":"Too many requests, please try again later.","reason":"TooManyRequests",)"
        R"("details":{"retryAfterSeconds":1},"code":429})";
    const std::string reply =
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: "
        "1\r\nConnection: close\r\nContent-Length: " +
        std::to_string(kBody.size()) + "\r\n\r\n" + std::string(kBody);
    (void)send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    // What the client already sent, read: closing with unread bytes would
    // reset the connection, and the client might lose the answer.
    char discard[4096];
    while (recv(fd, discard, sizeof discard, MSG_DONTWAIT) > 0) {
    }
  }
  close(fd);
}

namespace {

// The address of a connection's peer, for Request::peer: "unix" for a unix
// socket, "" where unknown.
std::string PeerName(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char name[INET6_ADDRSTRLEN] = {};
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    if (addr.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, name, sizeof name);
    } else if (addr.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, name, sizeof name);
    } else if (addr.ss_family == AF_UNIX) {
      std::strcpy(name, "unix");
    }
  }
  return name;
}

}  // namespace

// What a connection received that no request has taken yet, and the reads
// that add to it.
class Server::Inbound {
 public:
  Inbound(int fd, SSL* ssl, std::stop_token stop) : fd_(fd), ssl_(ssl), stop_(std::move(stop)) {}

  // Reads what arrives by `deadline`; false at the deadline, the end of the
  // connection or an error.
  bool Fill(Clock::time_point deadline) {
    for (;;) {
      if (ssl_) {
        ERR_clear_error();
        const int n = SSL_read(ssl_, buf_, sizeof buf_);
        if (n > 0) {
          bytes_.append(buf_, static_cast<size_t>(n));
          return true;
        }
        if (!TlsRetry(ssl_, n, fd_, deadline, stop_)) return false;
      } else {
        const ssize_t n = recv(fd_, buf_, sizeof buf_, 0);
        if (n > 0) {
          bytes_.append(buf_, static_cast<size_t>(n));
          return true;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
        if (errno != EINTR && !Await(fd_, exec::FdWait::kReadable, deadline, stop_)) return false;
      }
    }
  }
  std::string& bytes() { return bytes_; }
  int fd() const { return fd_; }

 private:
  const int fd_;
  SSL* const ssl_;  // null for plain TCP
  const std::stop_token stop_;
  std::string bytes_;
  char buf_[16 << 10];
};

bool Server::Handshake(SSL* ssl, int fd, const std::stop_token& stop) const {
  const Clock::time_point deadline = Clock::now() + options_.header_timeout;
  bool shook = ssl && SSL_set_fd(ssl, fd) == 1;
  while (shook) {
    ERR_clear_error();
    const int rc = SSL_accept(ssl);
    if (rc == 1) break;
    shook = TlsRetry(ssl, rc, fd, deadline, stop);
  }
  return shook;
}

Server::Next Server::ServeRequest(Inbound& inbound, const std::string& peer, bool first, SSL* ssl,
                                  const std::stop_token& stop) {
  const int fd = inbound.fd();
  std::string& in = inbound.bytes();
  // The first request's head is due header_timeout after the connection
  // opens; a later one's idle_timeout after the last response, and then
  // header_timeout after its first byte.
  Clock::time_point deadline =
      Clock::now() + (first || !in.empty() ? options_.header_timeout : options_.idle_timeout);
  size_t end;
  while ((end = in.find("\r\n\r\n")) == std::string::npos) {
    const bool was_idle = in.empty();
    const bool more = in.size() <= kMaxHeaderBytes && inbound.Fill(deadline);
    if (more && was_idle) deadline = Clock::now() + options_.header_timeout;
    if (!more) {
      if (in.size() > kMaxHeaderBytes) {
        ResponseWriter(fd, ssl, options_.write_timeout, stop)
            .Send(431, {{"Content-Type", "text/plain"}}, "request header too large\n");
      }
      return Next::kDrop;
    }
  }
  Request req;
  req.peer = peer;
  ResponseWriter w(fd, ssl, options_.write_timeout, stop);
  bool ok = ParseHead(std::string_view(in).substr(0, end), &req);
  in.erase(0, end + 4);
  if (!ok) {
    w.Send(400, {{"Content-Type", "text/plain"}, {"Connection", "close"}}, "malformed request\n");
    return Next::kClose;
  }
  if (!req.Header("Transfer-Encoding").empty()) {
    w.Send(411, {{"Content-Type", "text/plain"}, {"Connection", "close"}},
           "a request body needs Content-Length\n");
    return Next::kClose;
  }
  size_t length = 0;
  if (std::string cl = req.Header("Content-Length"); !cl.empty()) {
    char* endp = nullptr;
    unsigned long long v = std::strtoull(cl.c_str(), &endp, 10);
    if (*endp != '\0' || v > kMaxBodyBytes) {
      w.Send(413, {{"Content-Type", "text/plain"}, {"Connection", "close"}},
             "request body too large or its length unreadable\n");
      return Next::kClose;
    }
    length = static_cast<size_t>(v);
  }
  const Clock::time_point body_deadline = Clock::now() + options_.body_timeout;
  while (in.size() < length) {
    if (!inbound.Fill(body_deadline)) return Next::kClose;
  }
  req.body = in.substr(0, length);
  in.erase(0, length);
  handler_(req, w);
  if (w.cut()) return Next::kClose;
  if (!w.started()) {
    w.Send(500, {{"Content-Type", "text/plain"}}, "no response\n");
  } else if (!w.finished()) {
    if (!w.End()) return Next::kClose;
  }
  if (EqualsIgnoreCase(req.Header("Connection"), "close") || stop.stop_requested())
    return Next::kClose;
  return Next::kServe;
}

void Server::Serve(Connection* conn) {
  const int fd = conn->fd;
  // OpenSSL writes to the socket without MSG_NOSIGNAL: a peer gone
  // mid-write must fail that write (EPIPE), not kill the process. SIGPIPE
  // from a write goes to the writing thread, so blocking it here suffices
  // (fibers' carriers block it from their start).
  if (!options_.fibers) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  }
  const std::stop_token stop = stop_.get_token();
  const std::string peer = PeerName(fd);
  std::unique_ptr<SSL, void (*)(SSL*)> ssl(nullptr, SSL_free);
  if (tls_) {
    ssl.reset(SSL_new(tls_));
    // A failed handshake (a plain-HTTP client, an untrusting one) ends the
    // connection; the client sees why.
    if (!Handshake(ssl.get(), fd, stop)) {
      ERR_clear_error();
      shutdown(fd, SHUT_RDWR);
      conn->done = true;
      return;
    }
  }
  Inbound inbound(fd, ssl.get(), stop);
  Next next = Next::kServe;
  // One request after another on a kept-alive connection.
  for (bool first = true; next == Next::kServe; first = false) {
    next = ServeRequest(inbound, peer, first, ssl.get(), stop);
  }
  // close_notify: the end is not a truncation.
  if (ssl && next == Next::kClose) SSL_shutdown(ssl.get());
  shutdown(fd, SHUT_RDWR);  // the client sees the end of the connection
  conn->done = true;
}

}  // namespace kcache::serve::http
