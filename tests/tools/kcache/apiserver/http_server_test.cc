// SPDX-License-Identifier: Apache-2.0

// The HTTP server's limits: every wait on a client is bounded, and a client
// that holds connections open (half-sent requests, never reading) cannot keep
// others from being served.

#include "tools/kcache/apiserver/http_server.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "testing/loopback.h"
#include "testing/status_matchers.h"

namespace kcache::serve::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A connected socket to 127.0.0.1:`port`; receives give up after 10 s.
int Connect(int port, int receive_buffer = 0) {
  int fd = testing::ConnectLoopback(port, receive_buffer);
  EXPECT_GE(fd, 0) << std::strerror(errno);
  timeval limit{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  return fd;
}

void SendText(int fd, std::string_view text) {
  ASSERT_EQ(send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// What the server sends until it closes the connection (`*closed` set) or
// 10 s pass.
std::string ReadToEnd(int fd, bool* closed = nullptr) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  if (closed) *closed = n == 0;
  return out;
}

// Whether the server has closed `fd` (a read gives end of file at once).
bool ClosedByServer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

std::unique_ptr<Server> StartServer(const ServerOptions& options, Handler handler) {
  if (!handler) {
    handler = [](const Request& req, ResponseWriter& w) {
      w.Send(200, {{"Content-Type", "text/plain"}}, "hello " + req.peer);
    };
  }
  auto server = Server::Start("127.0.0.1:0", std::move(handler), options);
  EXPECT_OK(server);
  return server.ok() ? std::move(*server) : nullptr;
}

// Each test runs with a thread per connection and with a fiber per
// connection (ServerOptions::fibers): the limits hold either way.
class HttpServerTest : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Server> Start(ServerOptions options, Handler handler = nullptr) {
    options.fibers = GetParam();
    return StartServer(options, std::move(handler));
  }
};

INSTANTIATE_TEST_SUITE_P(Threading, HttpServerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Fibers" : "Threads";
                         });

constexpr std::string_view kRequest = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

// Slowloris: hundreds of connections that send a request's head a few bytes
// at a time and never finish it. A normal client is served at once, beside
// them, and each of them is closed once its head is overdue.
TEST_P(HttpServerTest, HalfSentRequestsNeitherDelayOthersNorOutliveTheHeaderTimeout) {
  ServerOptions options;
  options.header_timeout = 2s;
  std::unique_ptr<Server> server = Start(options);
  ASSERT_NE(server, nullptr);
  constexpr int kSlow = 300;
  std::vector<int> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(Connect(server->port()));
    SendText(slow.back(), "GET / HTTP/1.1\r\nHo");
  }
  // One byte each, every 100 ms: each stays below any idle limit.
  std::atomic<bool> dripping{true};
  std::thread drip([&] {
    while (dripping) {
      for (int fd : slow) (void)send(fd, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(100ms);
    }
  });
  const auto asked = Clock::now();
  int fd = Connect(server->port());
  SendText(fd, kRequest);
  const std::string reply = ReadToEnd(fd);
  const auto served_in = Clock::now() - asked;
  close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("hello 127.0.0.1"), std::string::npos) << reply;
  // Within its header timeout, for all the half-sent heads beside it.
  EXPECT_LT(served_in, options.header_timeout);
  // Every half-sent head is given up: its first request is due a header
  // timeout after its connection (or first byte), so all are closed within
  // two, and a little time to close them.
  std::this_thread::sleep_for(2 * options.header_timeout + 500ms);
  int closed = 0;
  for (int s : slow) closed += ClosedByServer(s) ? 1 : 0;
  dripping = false;
  drip.join();
  for (int s : slow) close(s);
  EXPECT_EQ(closed, kSlow);
}

// One connection more than max_connections gets kube-apiserver's 429 with
// Retry-After (which client-go waits and retries on); once a connection
// ends, a new one is served.
TEST_P(HttpServerTest, ConnectionsBeyondTheCapAreAnswered429WithRetryAfter) {
  ServerOptions options;
  options.max_connections = 4;
  std::unique_ptr<Server> server = Start(options);
  ASSERT_NE(server, nullptr);
  std::vector<int> held;
  for (size_t i = 0; i < options.max_connections; ++i) held.push_back(Connect(server->port()));
  std::this_thread::sleep_for(200ms);  // all accepted
  int fd = Connect(server->port());
  SendText(fd, kRequest);
  const std::string refused = ReadToEnd(fd);
  close(fd);
  EXPECT_EQ(refused.rfind("HTTP/1.1 429 Too Many Requests\r\n", 0), 0u) << refused;
  EXPECT_NE(refused.find("\r\nRetry-After: 1\r\n"), std::string::npos) << refused;
  EXPECT_NE(refused.find(R"("reason":"TooManyRequests")"), std::string::npos) << refused;
  for (int h : held) close(h);
  std::string reply;
  for (int i = 0; i < 50 && reply.rfind("HTTP/1.1 200", 0) != 0; ++i) {
    std::this_thread::sleep_for(20ms);
    fd = Connect(server->port());
    SendText(fd, kRequest);
    reply = ReadToEnd(fd);
    close(fd);
  }
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply;
}

// A kept-alive connection that sends no next request is closed after
// idle_timeout; a connection that never sends anything, after the header
// timeout.
TEST_P(HttpServerTest, IdleAndSilentConnectionsAreClosed) {
  ServerOptions options;
  options.header_timeout = 500ms;
  options.idle_timeout = 3s;
  std::unique_ptr<Server> server = Start(options);
  ASSERT_NE(server, nullptr);
  int silent = Connect(server->port());
  int kept = Connect(server->port());
  SendText(kept, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string first;  // the whole first response: its head and body come in two writes
  char buf[512];
  for (ssize_t n; first.find("hello 127.0.0.1") == std::string::npos &&
                  (n = recv(kept, buf, sizeof buf, 0)) > 0;) {
    first.append(buf, static_cast<size_t>(n));
  }
  ASSERT_NE(first.find("hello 127.0.0.1"), std::string::npos) << first;
  const auto start = Clock::now();
  std::this_thread::sleep_for(options.header_timeout + 500ms);
  EXPECT_TRUE(ClosedByServer(silent));
  EXPECT_FALSE(ClosedByServer(kept)) << "closed before its idle timeout";
  bool closed = false;
  EXPECT_EQ(ReadToEnd(kept, &closed), "");  // the end of the connection, nothing more
  EXPECT_TRUE(closed) << "still open after 10 s";
  EXPECT_GE(Clock::now() - start, options.idle_timeout - 100ms);
  close(silent);
  close(kept);
}

// A client that stops reading a streamed response: once the socket buffers
// are full, the server's write waits write_timeout, fails, and the handler
// returns; nothing is buffered without bound.
TEST_P(HttpServerTest, AClientThatStopsReadingIsCutOffAtTheWriteTimeout) {
  ServerOptions options;
  options.write_timeout = 500ms;
  std::atomic<bool> returned{false};
  std::atomic<size_t> sent{0};
  std::unique_ptr<Server> server = Start(options, [&](const Request&, ResponseWriter& w) {
    const std::string chunk(64 << 10, 'x');
    w.Begin(200, {});
    while (w.Write(chunk)) sent += chunk.size();
    returned = true;
  });
  ASSERT_NE(server, nullptr);
  int fd = Connect(server->port(), /*receive_buffer=*/4096);
  SendText(fd, kRequest);
  for (int i = 0; i < 200 && !returned; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(returned) << "the handler still writes to a client that reads nothing";
  // What went out is what the socket buffers hold, not an unbounded queue.
  EXPECT_LT(sent.load(), size_t{64} << 20);
  close(fd);
}

TEST_P(HttpServerTest, ZeroLimitsAreRefused) {
  ServerOptions options;
  options.max_connections = 0;
  auto started = Server::Start(
      "127.0.0.1:0", [](const Request&, ResponseWriter&) {}, options);
  EXPECT_EQ(started.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kcache::serve::http
