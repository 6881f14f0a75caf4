// SPDX-License-Identifier: Apache-2.0

// Transport: HTTP requests over libcurl, all driven by one thread through one
// curl multi handle, so that concurrent requests (many watches) share
// connections, multiplexed over HTTP/2 where the server offers it.
//
// Thread-safety: a Transport and its Transfers are thread-safe.
#ifndef KCACHE_SRC_CLIENT_TRANSPORT_H_
#define KCACHE_SRC_CLIENT_TRANSPORT_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "exec/fiber.h"
#include "kcache/status_or.h"

namespace kcache::rest {

// TLS settings of a request. Byte fields hold PEM.
struct TlsSettings {
  bool insecure_skip_verify = false;
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  // "host:port:connect-host:connect-port" when the certificate is checked
  // against another name than the URL's host (tls-server-name).
  std::string connect_to;
};

struct Request {
  std::string method = "GET";
  std::string url;
  // "Name: value" lines. May hold credentials: never logged or quoted.
  std::vector<std::string> headers;
  std::string body;
  // Whole-request limit; zero for none (watches).
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds connect_timeout{10000};
  // Read-ahead bound: the transfer pauses while this much is unread.
  size_t max_buffered = 4 << 20;
  std::shared_ptr<const TlsSettings> tls;  // null: curl's defaults
  // Ask for a gzip-compressed body (Accept-Encoding: gzip); curl inflates it.
  bool accept_gzip = false;
  // Read() fails with DeadlineExceeded after waiting this long with no
  // body bytes since the last ones (or since its caller last took bytes);
  // zero for no limit.
  std::chrono::milliseconds idle_timeout{0};
};

class Transfer : public std::enable_shared_from_this<Transfer> {
 public:
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Blocks until the response status and headers are in; returns the HTTP
  // code. Errors: the transfer's failure (connection refused, TLS, ...).
  StatusOr<int> WaitHeaders();

  // The last value of response header `name` (case-insensitive), if any.
  std::optional<std::string> Header(std::string_view name) const;

  // Blocks until body bytes arrive, then moves them into `*out` (appended).
  // Sets `*eof` at the end of a complete response. Errors: a broken
  // transfer (Unavailable, DeadlineExceeded, ...), Cancelled, and
  // DeadlineExceeded once Request::idle_timeout passes with no bytes.
  Status Read(std::string* out, bool* eof);

  // Reads the whole body.
  StatusOr<std::string> ReadAll();

  // Stops the transfer; blocked and later calls return Cancelled.
  void Cancel();

 private:
  friend class Transport;
  Transfer() = default;

  static size_t OnHeader(char* data, size_t size, size_t n, void* self);
  static size_t OnBody(char* data, size_t size, size_t n, void* self);
  // curl's socket opener (over TLS): one new connection at a time.
  static int OnOpenSocket(void* self, int purpose, void* address);

  std::weak_ptr<class Transport> transport_;
  void* easy_ = nullptr;         // CURL*, owned
  void* header_list_ = nullptr;  // curl_slist*, owned
  void* connect_to_ = nullptr;   // curl_slist*, owned
  std::string what_;             // "GET <url>" for messages
  Request request_;
  char error_buf_[256] = {};
  // Loop thread only: its new connection was refused while another was being
  // made (Transport::dialing_); it starts again once that one is up.
  bool dial_refused_ = false;

  mutable std::mutex mu_;
  exec::CondVar cv_;  // a reflector on a fiber gives its carrier away while it waits
  bool headers_done_ = false;
  int http_code_ = 0;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string body_;
  bool paused_ = false;
  bool unpause_requested_ = false;
  bool done_ = false;
  bool cancelled_ = false;
  Status result_;
  // When body bytes last arrived or were taken; set by the first Read.
  std::chrono::steady_clock::time_point last_bytes_{};
};

class Transport : public std::enable_shared_from_this<Transport> {
 public:
  // `proxy_url` empty: curl's *_proxy environment variables apply.
  static StatusOr<std::shared_ptr<Transport>> Create(std::string proxy_url);
  ~Transport();

  // Starts `request`. Failures to set it up arrive through the Transfer.
  std::shared_ptr<Transfer> Start(Request request);

  // Body bytes of finished transfers as they came over the network
  // (compressed when the server compressed them).
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  friend class Transfer;
  Transport() = default;
  void Run();
  void Post(std::function<void()> command);
  void Finish(Transfer* t, Status result);
  void Configure(Transfer* t);

  std::string proxy_url_;
  void* multi_ = nullptr;  // CURLM*, owned

  std::mutex mu_;
  std::deque<std::function<void()>> commands_;
  bool stopping_ = false;
  std::thread thread_;

  // Loop thread only.
  std::vector<std::shared_ptr<Transfer>> active_;
  // New connections over TLS are made one at a time, as Go's HTTP/2 client
  // does: a transfer that finds every connection at the server's stream cap
  // while another connection is being made waits (held_) for that one
  // instead of making its own. libcurl 7.88 does not see a connection being
  // made as a candidate, so 50 watches past a cap of 250 made 50 TLS
  // connections.
  Transfer* dialing_ = nullptr;  // its transfer, until it has headers or ends
  std::chrono::steady_clock::time_point dial_started_;
  std::vector<std::shared_ptr<Transfer>> held_;
  // False once a connection over TLS turned out not to be HTTP/2: each
  // transfer then needs a connection of its own, made at once.
  bool multiplexing_ = true;
  void ReleaseHeld();
  void StartHeld();
  void LearnVersion(Transfer* t);
  std::atomic<uint64_t> bytes_received_{0};
};

}  // namespace kcache::rest

#endif  // KCACHE_SRC_CLIENT_TRANSPORT_H_
