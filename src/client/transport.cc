// SPDX-License-Identifier: Apache-2.0

#include "client/transport.h"

#include <pthread.h>

#include <curl/curl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace kcache::rest {
namespace {

CURL* Easy(void* p) { return static_cast<CURL*>(p); }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The Status for a failed transfer; the one place curl's codes map to ours.
Status FromCurl(CURLcode code, const char* detail, const std::string& what) {
  std::string msg = what + ": " + (detail && *detail ? detail : curl_easy_strerror(code));
  switch (code) {
    case CURLE_OK:
      return Status::OK();
    case CURLE_OPERATION_TIMEDOUT:
      return Status(StatusCode::kDeadlineExceeded, msg);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Status::InvalidArgument(msg);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
      return Status::FailedPrecondition(msg);
    default:
      return Status::Unavailable(msg);
  }
}

std::once_flag g_curl_init;

}  // namespace

Transfer::~Transfer() {
  if (easy_) curl_easy_cleanup(Easy(easy_));
  if (header_list_) curl_slist_free_all(static_cast<curl_slist*>(header_list_));
  if (connect_to_) curl_slist_free_all(static_cast<curl_slist*>(connect_to_));
}

size_t Transfer::OnHeader(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<Transfer*>(self);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::lock_guard<std::mutex> lock(t->mu_);
  if (line.starts_with("HTTP/")) {
    t->headers_.clear();  // a new response block (after 100 or a proxy CONNECT)
  } else if (line.empty()) {
    long code = 0;
    curl_easy_getinfo(Easy(t->easy_), CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) {
      t->http_code_ = static_cast<int>(code);
      t->headers_done_ = true;
      t->cv_.notify_all();
    }
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    t->headers_.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return size * n;
}

size_t Transfer::OnBody(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<Transfer*>(self);
  std::lock_guard<std::mutex> lock(t->mu_);
  if (t->cancelled_) return 0;  // aborts the transfer
  if (!t->body_.empty() && t->body_.size() + size * n > t->request_.max_buffered) {
    t->paused_ = true;  // curl delivers these bytes again after the unpause
    return CURL_WRITEFUNC_PAUSE;
  }
  t->body_.append(data, size * n);
  t->last_bytes_ = std::chrono::steady_clock::now();
  t->cv_.notify_all();
  return size * n;
}

int Transfer::OnOpenSocket(void* self, int purpose, void* address) {
  auto* t = static_cast<Transfer*>(self);
  auto* a = static_cast<curl_sockaddr*>(address);
  if (purpose == CURLSOCKTYPE_IPCXN) {
    if (auto transport = t->transport_.lock()) {
      if (transport->multiplexing_ && transport->dialing_ && transport->dialing_ != t) {
        t->dial_refused_ = true;
        return CURL_SOCKET_BAD;
      }
      if (transport->multiplexing_ && !transport->dialing_) {
        transport->dialing_ = t;
        transport->dial_started_ = std::chrono::steady_clock::now();
      }
    }
  }
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

StatusOr<int> Transfer::WaitHeaders() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return headers_done_ || done_ || cancelled_; });
  if (cancelled_) return Status::Cancelled(what_ + ": cancelled");
  if (headers_done_) return http_code_;
  if (!result_.ok()) return result_;
  return Status::Unavailable(what_ + ": the server closed the connection without a response");
}

std::optional<std::string> Transfer::Header(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = headers_.rbegin(); it != headers_.rend(); ++it) {
    if (EqualsIgnoreCase(it->first, name)) return it->second;
  }
  return std::nullopt;
}

Status Transfer::Read(std::string* out, bool* eof) {
  *eof = false;
  bool unpause = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return !body_.empty() || done_ || cancelled_; };
    const auto idle = request_.idle_timeout;
    if (idle.count() == 0) {
      cv_.wait(lock, ready);
    } else {
      if (last_bytes_ == std::chrono::steady_clock::time_point{}) {
        last_bytes_ = std::chrono::steady_clock::now();
      }
      if (!cv_.wait_until(lock, last_bytes_ + idle, ready)) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3g", idle.count() / 1000.0);
        return Status::DeadlineExceeded(what_ + ": nothing received for " + seconds +
                                        " s: the stream stalled");
      }
    }
    if (cancelled_) return Status::Cancelled(what_ + ": cancelled");
    if (!body_.empty()) {
      // Bytes the caller takes now were waiting for it: the server is
      // idle only from here on.
      if (idle.count() != 0) last_bytes_ = std::chrono::steady_clock::now();
      if (out->empty()) {
        out->swap(body_);
      } else {
        out->append(body_);
      }
      body_.clear();
      if (paused_ && !unpause_requested_) unpause = unpause_requested_ = true;
    } else if (done_) {
      if (!result_.ok()) return result_;
      *eof = true;
    }
  }
  if (unpause) {
    if (auto transport = transport_.lock()) {
      transport->Post([self = shared_from_this()] {
        {
          std::lock_guard<std::mutex> lock(self->mu_);
          self->paused_ = self->unpause_requested_ = false;
          if (self->done_) return;
        }
        curl_easy_pause(Easy(self->easy_), CURLPAUSE_CONT);
      });
    }
  }
  return Status::OK();
}

StatusOr<std::string> Transfer::ReadAll() {
  std::string body;
  for (bool eof = false; !eof;) KCACHE_RETURN_IF_ERROR(Read(&body, &eof));
  return body;
}

void Transfer::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_ || done_) {
      cancelled_ = true;
      cv_.notify_all();
      return;
    }
    cancelled_ = true;
    cv_.notify_all();
  }
  if (auto transport = transport_.lock()) {
    transport->Post([transport = transport.get(), self = shared_from_this()] {
      transport->Finish(self.get(), Status::Cancelled("cancelled"));
    });
  }
}

StatusOr<std::shared_ptr<Transport>> Transport::Create(std::string proxy_url) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::shared_ptr<Transport> t(new Transport());
  t->proxy_url_ = std::move(proxy_url);
  t->multi_ = curl_multi_init();
  if (!t->multi_) return Status::Internal("curl_multi_init failed");
  curl_multi_setopt(t->multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  // libcurl's own cap on streams per connection is 100: past it, every
  // request that starts while a new connection is being made makes one more
  // (75 TLS handshakes for 300 watches). The server's cap (Go's 250) still
  // applies, and spreads streams over more connections past it.
  curl_multi_setopt(t->multi_, CURLMOPT_MAX_CONCURRENT_STREAMS, 100000L);
  t->thread_ = std::thread([raw = t.get()] { raw->Run(); });
  // Named so that tools and tests can tell transports apart from other threads.
  pthread_setname_np(t->thread_.native_handle(), "kcache-http");
  return t;
}

Transport::~Transport() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  curl_multi_wakeup(multi_);
  thread_.join();
  for (auto& t : held_) {
    std::lock_guard<std::mutex> lock(t->mu_);
    t->done_ = true;
    t->result_ = Status::Cancelled(t->what_ + ": the client was closed");
    t->cv_.notify_all();
  }
  held_.clear();
  for (auto& t : active_) {
    curl_multi_remove_handle(multi_, Easy(t->easy_));
    std::lock_guard<std::mutex> lock(t->mu_);
    t->done_ = true;
    t->result_ = Status::Cancelled(t->what_ + ": the client was closed");
    t->cv_.notify_all();
  }
  active_.clear();
  curl_multi_cleanup(multi_);
}

void Transport::Post(std::function<void()> command) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    commands_.push_back(std::move(command));
  }
  curl_multi_wakeup(multi_);
}

void Transport::Configure(Transfer* t) {
  CURL* e = Easy(t->easy_);
  const Request& r = t->request_;
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error_buf_);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  // Receives of 128 KiB rather than libcurl's 16: a list of pods is
  // hundreds of megabytes, and each receive is a system call and a
  // hand-over to the decoding thread.
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 128L << 10);
  // libcurl's own account of each transfer on stderr, for diagnosis.
  if (getenv("KCACHE_DEBUG_CURL")) curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  // Over TLS, wait to multiplex on a connection being set up rather than
  // open another. Plain http is HTTP/1.1 only: waiting there would wait for
  // an open watch to end.
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, r.url.starts_with("https://") ? 1L : 0L);
  if (r.url.starts_with("https://") && proxy_url_.empty()) {
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &Transfer::OnOpenSocket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t);
  }
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
  if (r.timeout.count() > 0) {
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  }
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if (r.accept_gzip) curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "gzip");
  if (r.method != "GET") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  }
  curl_slist* list = nullptr;
  for (const auto& h : r.headers) list = curl_slist_append(list, h.c_str());
  t->header_list_ = list;
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);

  if (!proxy_url_.empty()) curl_easy_setopt(e, CURLOPT_PROXY, proxy_url_.c_str());
  static const TlsSettings kNoTls;
  const TlsSettings& tls = r.tls ? *r.tls : kNoTls;
  if (tls.insecure_skip_verify) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!tls.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
  }
  if (!tls.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(tls.client_cert_pem.data()), tls.client_cert_pem.size(),
                   CURL_BLOB_NOCOPY};
    curl_blob key{const_cast<char*>(tls.client_key_pem.data()), tls.client_key_pem.size(),
                  CURL_BLOB_NOCOPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (!tls.connect_to.empty()) {
    curl_slist* ct = curl_slist_append(nullptr, tls.connect_to.c_str());
    t->connect_to_ = ct;
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, ct);
  }
}

std::shared_ptr<Transfer> Transport::Start(Request request) {
  std::shared_ptr<Transfer> t(new Transfer());
  t->transport_ = weak_from_this();
  t->what_ = request.method + " " + request.url;
  t->request_ = std::move(request);
  t->easy_ = curl_easy_init();
  if (!t->easy_) {
    t->done_ = true;
    t->result_ = Status::Internal(t->what_ + ": curl_easy_init failed");
    return t;
  }
  Configure(t.get());
  Post([this, t] {
    {
      std::lock_guard<std::mutex> lock(t->mu_);
      if (t->cancelled_) return;
    }
    CURLMcode rc = curl_multi_add_handle(multi_, Easy(t->easy_));
    if (rc != CURLM_OK) {
      std::lock_guard<std::mutex> lock(t->mu_);
      t->done_ = true;
      t->result_ = Status::Internal(t->what_ + ": " + curl_multi_strerror(rc));
      t->cv_.notify_all();
      return;
    }
    active_.push_back(t);
  });
  return t;
}

// The connection being made is up and its first answer in (by then the
// server's SETTINGS, with its stream cap, have been read), or it failed, or
// it has taken a second: the transfers held for it start again, and the
// first of them that needs another connection makes it.
void Transport::ReleaseHeld() {
  if (!dialing_) {
    // Refused while a dial that has ended since was in progress (its
    // failure and theirs came in one batch).
    if (!held_.empty()) StartHeld();
    return;
  }
  bool up = false;
  {
    std::lock_guard<std::mutex> lock(dialing_->mu_);
    up = dialing_->headers_done_;
  }
  if (up) LearnVersion(dialing_);
  if (!up && std::chrono::steady_clock::now() - dial_started_ < std::chrono::seconds(1)) return;
  StartHeld();
}

void Transport::LearnVersion(Transfer* t) {
  long version = 0;
  curl_easy_getinfo(Easy(t->easy_), CURLINFO_HTTP_VERSION, &version);
  if (version != 0 && version < CURL_HTTP_VERSION_2) multiplexing_ = false;
}

void Transport::StartHeld() {
  dialing_ = nullptr;
  std::vector<std::shared_ptr<Transfer>> held;
  held.swap(held_);
  for (auto& t : held) {
    t->dial_refused_ = false;
    curl_multi_add_handle(multi_, Easy(t->easy_));
    active_.push_back(std::move(t));
  }
}

void Transport::Finish(Transfer* done, Status result) {
  if (done == dialing_) {
    // Its request ended (or its connection failed): the held ones start,
    // and meet whatever it met themselves.
    LearnVersion(done);
    StartHeld();
  }
  auto it =
      std::find_if(active_.begin(), active_.end(), [&](const auto& t) { return t.get() == done; });
  if (it == active_.end()) {
    // Cancelled while held: it never started again.
    auto h =
        std::find_if(held_.begin(), held_.end(), [&](const auto& t) { return t.get() == done; });
    if (h == held_.end()) return;  // already finished
    std::shared_ptr<Transfer> t = std::move(*h);
    held_.erase(h);
    std::lock_guard<std::mutex> lock(t->mu_);
    t->done_ = true;
    if (!t->cancelled_) t->result_ = std::move(result);
    t->cv_.notify_all();
    return;
  }
  std::shared_ptr<Transfer> t = std::move(*it);
  active_.erase(it);
  curl_off_t wire = 0;
  if (curl_easy_getinfo(Easy(t->easy_), CURLINFO_SIZE_DOWNLOAD_T, &wire) == CURLE_OK && wire > 0) {
    bytes_received_ += static_cast<uint64_t>(wire);
  }
  curl_multi_remove_handle(multi_, Easy(t->easy_));
  std::lock_guard<std::mutex> lock(t->mu_);
  t->done_ = true;
  if (!t->cancelled_) t->result_ = std::move(result);
  t->cv_.notify_all();
}

void Transport::Run() {
  for (;;) {
    std::deque<std::function<void()>> commands;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      commands.swap(commands_);
    }
    for (auto& c : commands) c();
    int running = 0;
    curl_multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      CURLcode code = msg->data.result;
      if (t->dial_refused_) {
        // Held until the connection being made is up (OnOpenSocket).
        curl_multi_remove_handle(multi_, msg->easy_handle);
        auto it = std::find_if(active_.begin(), active_.end(),
                               [&](const auto& a) { return a.get() == t; });
        if (it != active_.end()) {
          held_.push_back(std::move(*it));
          active_.erase(it);
        }
        continue;
      }
      Finish(t, FromCurl(code, t->error_buf_, t->what_));
    }
    ReleaseHeld();
    curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
  }
}

}  // namespace kcache::rest
