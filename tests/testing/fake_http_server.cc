#include "testing/fake_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>

namespace kcache::testing {
namespace {

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string FakeRequest::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (Lower(k) == Lower(name)) return v;
  }
  return "";
}

FakeHttpServer::FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  listen(listen_fd_, 64);
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] {
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
      workers_.emplace_back([this, fd] { Serve(fd); });
    }
  });
}

FakeHttpServer::~FakeHttpServer() {
  stopping_ = true;
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  }
  for (auto& w : workers_) w.join();
  for (int fd : fds_) close(fd);
  close(listen_fd_);
}

std::string FakeHttpServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<FakeRequest> FakeHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeHttpServer::Serve(int fd) {
  ServeConnection(fd);
  shutdown(fd, SHUT_RDWR);  // the client sees the end of the connection
}

void FakeHttpServer::ServeConnection(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {  // one request after another on a kept-alive connection
    size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    std::string head = in.substr(0, end);
    in.erase(0, end + 4);
    FakeRequest req;
    size_t line_end = head.find("\r\n");
    std::string first = head.substr(0, line_end);
    size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
    req.method = first.substr(0, sp1);
    req.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t content_length = 0;
    for (size_t pos = line_end; pos != std::string::npos && pos < head.size();) {
      size_t next = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      if (size_t colon = line.find(':'); colon != std::string::npos) {
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        req.headers.emplace_back(line.substr(0, colon), value);
        if (Lower(line.substr(0, colon)) == "content-length") content_length = std::stoul(value);
      }
      pos = next;
    }
    while (in.size() < content_length) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    in.erase(0, content_length);
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
    }
    FakeResponse resp = handler_(req);
    std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " X\r\n";
    bool has_type = false;
    for (const auto& [k, v] : resp.headers) {
      out += k + ": " + v + "\r\n";
      has_type |= Lower(k) == "content-type";
    }
    if (!has_type) out += "Content-Type: application/json\r\n";
    out += "Transfer-Encoding: chunked\r\n\r\n";
    if (!SendAll(fd, out)) return;
    for (const auto& chunk : resp.chunks) {
      if (chunk.empty()) continue;
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
      if (!SendAll(fd, std::string(size) + chunk + "\r\n")) return;
    }
    if (resp.cut) return;
    if (resp.stall) {
      while (!stopping_) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) {
          if (recv(fd, buf, sizeof buf, 0) <= 0) return;  // the client went away
        }
      }
      return;
    }
    if (!SendAll(fd, "0\r\n\r\n")) return;
  }
}

}  // namespace kcache::testing
