// SPDX-License-Identifier: Apache-2.0

// FakeHttpServer: a scripted HTTP/1.1 server on loopback for REST client
// tests. Each request is answered by a handler; the response body goes out
// as the chunks the handler chose (chunked encoding), so tests control where
// the boundaries fall, and may end the connection early or stall.
#ifndef KCACHE_TESTS_TESTING_FAKE_HTTP_SERVER_H_
#define KCACHE_TESTS_TESTING_FAKE_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tools/kcache/apiserver/http_server.h"

namespace kcache::testing {

struct FakeRequest {
  std::string method;
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string Header(const std::string& name) const;
};

struct FakeResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  // Sent one HTTP chunk each, in order.
  std::vector<std::string> chunks;
  // Close the connection after the chunks without the final empty chunk (a
  // stream cut mid-way).
  bool cut = false;
  // Keep the connection open after the chunks until the server stops or the
  // client goes away (a stalled watch).
  bool stall = false;
};

class FakeHttpServer {
 public:
  using Handler = std::function<FakeResponse(const FakeRequest&)>;
  explicit FakeHttpServer(Handler handler);
  ~FakeHttpServer();

  // "http://127.0.0.1:PORT"
  std::string url() const;
  // Requests seen so far, in order.
  std::vector<FakeRequest> requests() const;

 private:
  void Serve(const serve::http::Request& req, serve::http::ResponseWriter& w);

  Handler handler_;
  mutable std::mutex mu_;
  std::vector<FakeRequest> requests_;
  std::unique_ptr<serve::http::Server> server_;  // last: stops before the rest goes
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_FAKE_HTTP_SERVER_H_
