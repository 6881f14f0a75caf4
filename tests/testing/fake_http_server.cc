// SPDX-License-Identifier: Apache-2.0

#include "testing/fake_http_server.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace kcache::testing {

std::string FakeRequest::Header(const std::string& name) const {
  serve::http::Request r;
  r.headers = headers;
  return r.Header(name);
}

FakeHttpServer::FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
  StatusOr<std::unique_ptr<serve::http::Server>> server = serve::http::Server::Start(
      "127.0.0.1:0",
      [this](const serve::http::Request& req, serve::http::ResponseWriter& w) { Serve(req, w); });
  if (!server.ok()) {
    std::cerr << "FakeHttpServer: " << server.status().message() << "\n";
    std::abort();
  }
  server_ = std::move(server).value();
}

FakeHttpServer::~FakeHttpServer() { server_->Stop(); }

std::string FakeHttpServer::url() const { return server_->url(); }

std::vector<FakeRequest> FakeHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeHttpServer::Serve(const serve::http::Request& req, serve::http::ResponseWriter& w) {
  FakeRequest fr{req.method, req.target, req.headers, req.body};
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(fr);
  }
  FakeResponse resp = handler_(fr);
  if (!w.Begin(resp.status, resp.headers)) return;
  for (const std::string& chunk : resp.chunks) {
    if (!w.Write(chunk)) return;
  }
  if (resp.cut) return w.Cut();
  if (resp.stall) {
    while (!w.PeerGone()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return w.Cut();
  }
}

}  // namespace kcache::testing
