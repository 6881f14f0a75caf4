// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/bench/serve_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/bench/timing.h"
#include "tools/kcache/testcluster/server.h"
#include "tools/kcache/testcluster/synthetic.h"

namespace kcache::bench {
namespace {

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Read {
  double seconds = 0;
  size_t bytes = 0;
};

// Sends `request` (if any) and reads until the peer closes, or until
// `newlines` newline bytes have arrived.
Read ReadAll(int fd, const std::string& request, size_t newlines = 0) {
  static thread_local std::vector<char> buf(1 << 20);
  Read r;
  auto t0 = Clock::now();
  if (!request.empty() && send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) return r;
  size_t seen = 0;
  for (;;) {
    ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    r.bytes += static_cast<size_t>(n);
    if (newlines) {
      seen += static_cast<size_t>(std::count(buf.data(), buf.data() + n, '\n'));
      if (seen >= newlines) break;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  close(fd);
  return r;
}

// A socket that a thread fills from memory: what loopback carries at most.
Read Loopback(size_t bytes) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  listen(lfd, 1);
  socklen_t len = sizeof addr;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread sender([lfd, bytes] {
    int fd = accept(lfd, nullptr, nullptr);
    std::vector<char> block(1 << 20, 'x');
    for (size_t sent = 0; sent < bytes;) {
      ssize_t n = send(fd, block.data(), std::min(block.size(), bytes - sent), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    close(fd);
  });
  Read r = ReadAll(Connect(ntohs(addr.sin_port)), "");
  sender.join();
  close(lfd);
  return r;
}

// kcache's HTTP server answering every request with `bytes` bytes from
// memory, chunked in 1 MiB writes, as a LIST is sent.
StatusOr<std::unique_ptr<serve::http::Server>> StaticServer() {
  return serve::http::Server::Start(
      "127.0.0.1:0", [](const serve::http::Request& req, serve::http::ResponseWriter& w) {
        static const std::string block(1 << 20, 'x');
        const size_t bytes = std::stoull(req.Query("bytes").value_or("0"));
        if (!w.Begin(200, {{"Content-Type", "application/json"}})) return;
        for (size_t sent = 0; sent < bytes; sent += block.size()) {
          if (!w.Write(std::string_view(block).substr(0, std::min(block.size(), bytes - sent)))) {
            return;
          }
        }
        w.End();
      });
}

int PortOf(const std::string& host_port) {
  return std::atoi(host_port.substr(host_port.rfind(':') + 1).c_str());
}

}  // namespace

Status RunServeBench(const ServeBenchOptions& o, std::ostream& out) {
  if (o.pods < 1 || o.events < 1 || o.runs < 1) {
    return Status::InvalidArgument("--pods, --events and --runs must be at least 1");
  }
  serve::ServeOptions so;
  so.listen = "127.0.0.1:0";
  so.cluster.pods = o.pods;
  so.churn = {0, 0, 0, 0};
  so.history = o.events;
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<serve::Server> server, serve::Server::Start(so));
  const int port = std::stoi(server->url().substr(server->url().rfind(':') + 1));
  serve::ClusterState& state = server->state();
  const int pods = state.Find("", "pods");

  // The burst: `events` status updates, applied before the watch starts.
  KCACHE_ASSIGN_OR_RETURN(serve::ListResult all, state.List(pods, {}));
  const uint64_t before = state.current_rv();
  for (int i = 0; i < o.events; ++i) {
    const serve::StoredPtr& target = all.items[static_cast<size_t>(i) % all.items.size()];
    auto applied = state.Apply(
        pods, target->key,
        [&](const serve::StoredPtr& cur, uint64_t rv) -> StatusOr<serve::Change> {
          return serve::Change{serve::Change::kWrite,
                               serve::StampResourceVersion(std::string(cur->object->json()), rv)};
        });
    if (!applied.ok()) return applied.status();
  }
  const std::string list_request =
      "GET /api/v1/pods?resourceVersion=0 HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
  const std::string watch_request =
      "GET /api/v1/pods?watch=true&resourceVersion=" + std::to_string(before) +
      " HTTP/1.1\r\nHost: bench\r\n\r\n";
  std::vector<double> loop_rate, list_rate, watch_rate, own_rate, peer_rate;
  size_t list_bytes = 0, watch_bytes = 0;
  std::unique_ptr<serve::http::Server> own;
  if (!o.http_peer.empty()) {
    KCACHE_ASSIGN_OR_RETURN(own, StaticServer());
  }
  for (int run = 0; run < o.runs; ++run) {
    Read list = ReadAll(Connect(port), list_request);
    Read watch = ReadAll(Connect(port), watch_request, static_cast<size_t>(o.events));
    Read loop = Loopback(list.bytes);
    if (list.bytes == 0 || watch.bytes == 0 || loop.bytes == 0)
      return Status::Internal("a benchmark read got nothing");
    list_bytes = list.bytes;
    watch_bytes = watch.bytes;
    list_rate.push_back(list.bytes / list.seconds / 1e6);
    watch_rate.push_back(watch.bytes / watch.seconds / 1e6);
    loop_rate.push_back(loop.bytes / loop.seconds / 1e6);
    if (own) {
      // The same body from memory, by each server in turn.
      const std::string request = "GET /?bytes=" + std::to_string(list.bytes) +
                                  " HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
      Read mine = ReadAll(Connect(own->port()), request);
      Read theirs = ReadAll(Connect(PortOf(o.http_peer)), request);
      if (mine.bytes < list.bytes || theirs.bytes < list.bytes) {
        return Status::Internal("a static body came short: " + std::to_string(mine.bytes) +
                                " and " + std::to_string(theirs.bytes) + " bytes of " +
                                std::to_string(list.bytes));
      }
      own_rate.push_back(mine.bytes / mine.seconds / 1e6);
      peer_rate.push_back(theirs.bytes / theirs.seconds / 1e6);
    }
  }
  const double loop = Median(loop_rate), list = Median(list_rate), watch = Median(watch_rate);
  char line[256];
  std::snprintf(
      line, sizeof line,
      "serve: %d pods (LIST of %.0f MB), a burst of %d watch events (%.0f MB), %d runs, medians\n",
      o.pods, list_bytes / 1e6, o.events, watch_bytes / 1e6, o.runs);
  out << line;
  std::snprintf(line, sizeof line, "  %-34s %8.0f MB/s\n", "loopback limit (memory to socket)",
                loop);
  out << line;
  std::snprintf(line, sizeof line, "  %-34s %8.0f MB/s  %.2fx the limit\n",
                "LIST resourceVersion=0", list, list / loop);
  out << line;
  std::snprintf(line, sizeof line, "  %-34s %8.0f MB/s  %.2fx the limit\n",
                "WATCH burst from a resourceVersion", watch, watch / loop);
  out << line;
  if (own) {
    const double mine = Median(own_rate), theirs = Median(peer_rate);
    std::snprintf(line, sizeof line, "  %-34s %8.0f MB/s  %.2fx the limit\n",
                  "kcache's HTTP server, from memory", mine, mine / loop);
    out << line;
    std::snprintf(line, sizeof line, "  %-34s %8.0f MB/s  %.2fx the limit, %.2fx kcache's\n",
                  ("peer " + o.http_peer + ", from memory").c_str(), theirs, theirs / loop,
                  theirs / mine);
    out << line;
  }
  server->Stop();
  return Status::OK();
}

}  // namespace kcache::bench
