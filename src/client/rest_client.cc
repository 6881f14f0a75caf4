// SPDX-License-Identifier: Apache-2.0

#include "kcache/rest_client.h"

#include <charconv>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "client/credentials.h"
#include "client/decode.h"
#include "client/http_error.h"
#include "client/json_framer.h"
#include "client/transport.h"
#include "exec/fiber.h"

namespace kcache {
namespace {

using rest::Transfer;

bool Unreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string QueryEscape(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    if (Unreserved(c)) {
      out += c;
    } else {
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 15];
    }
  }
  return out;
}

std::optional<int64_t> RetryAfterSeconds(const std::optional<std::string>& header) {
  if (!header) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(header->data(), header->data() + header->size(), v);
  if (ec != std::errc() || p != header->data() + header->size() || v < 0) return std::nullopt;
  return v;
}

struct ServerUrl {
  std::string base;        // scheme://host[:port][/prefix], the URL requests use
  std::string connect_to;  // for tls-server-name, else empty
};

StatusOr<ServerUrl> ParseServer(const RestConfig& config) {
  std::string server = config.server;
  size_t scheme_end = server.find("://");
  // Trailing slashes go, but not those of the scheme ("http://" has no host).
  const size_t keep = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  while (server.size() > keep && server.back() == '/') server.pop_back();
  if (scheme_end == std::string::npos) {
    // kubectl accepts a bare host:port and assumes https.
    server = "https://" + server;
    scheme_end = 5;
  }
  std::string scheme = server.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidArgument("server " + config.server + ": scheme must be http or https");
  }
  size_t host_begin = scheme_end + 3;
  size_t path_begin = server.find('/', host_begin);
  std::string hostport = server.substr(host_begin, path_begin - host_begin);
  std::string prefix = path_begin == std::string::npos ? "" : server.substr(path_begin);
  if (hostport.empty()) return Status::InvalidArgument("server " + config.server + ": no host");
  ServerUrl out;
  out.base = server;
  if (!config.tls_server_name.empty() && scheme == "https") {
    std::string host = hostport, port = "443";
    size_t colon = hostport.rfind(':');
    if (colon != std::string::npos && hostport.find(']', colon) == std::string::npos) {
      host = hostport.substr(0, colon);
      port = hostport.substr(colon + 1);
    }
    if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
    out.base = scheme + "://" + config.tls_server_name + ":" + port + prefix;
    out.connect_to = config.tls_server_name + ":" + port + ":" + host + ":" + port;
  }
  return out;
}

class HttpWatchStream final : public WatchStream {
 public:
  HttpWatchStream(std::shared_ptr<rest::Transport> transport, std::shared_ptr<Transfer> transfer,
                  std::string what, const RestClientOptions& o)
      : transport_(std::move(transport)),
        transfer_(std::move(transfer)),
        what_(std::move(what)),
        framer_(o.max_event_bytes),
        parse_(o.parse) {}
  ~HttpWatchStream() override { transfer_->Cancel(); }

  StatusOr<std::optional<WatchEvent>> Next() override {
    if (!final_.ok()) return final_;
    if (ended_) return std::optional<WatchEvent>();
    for (;;) {
      auto frame = pending_ ? std::move(*pending_) : framer_.Next();
      pending_.reset();
      if (!frame.ok()) return Fail(frame.status().WithContext(what_));
      if (*frame) {
        auto event = rest::DecodeWatchEvent(**frame, framer_.frame_offset(), parse_, what_);
        if (!event.ok()) return Fail(event.status());
        return std::optional<WatchEvent>(*std::move(event));
      }
      chunk_.clear();
      bool eof = false;
      Status st = transfer_->Read(&chunk_, &eof);
      if (!st.ok() && st.code() != StatusCode::kCancelled && framer_.InFrame()) {
        return Fail(Status(st.code(), what_ + ": the stream ended inside an event at byte " +
                                          std::to_string(framer_.offset()) + " (" +
                                          std::string(st.message()) + ")"));
      }
      if (!st.ok()) return Fail(st);
      if (eof) {
        if (framer_.InFrame()) {
          return Fail(Status::Unavailable(what_ + ": the stream ended inside an event at byte " +
                                          std::to_string(framer_.offset())));
        }
        ended_ = true;
        return std::optional<WatchEvent>();
      }
      framer_.Append(&chunk_);  // the framer takes the bytes; chunk_ keeps a buffer
    }
  }

  bool Ready() override {
    if (pending_) return true;
    if (!final_.ok() || ended_) return false;
    pending_ = framer_.Next();
    if (pending_->ok() && !**pending_) {
      pending_.reset();
      return false;
    }
    return true;
  }

  void Cancel() override { transfer_->Cancel(); }

 private:
  Status Fail(Status st) {
    final_ = st;
    transfer_->Cancel();
    return st;
  }

  std::shared_ptr<rest::Transport>
      transport_;  // outlives the transfer: the stream may outlive the client
  std::shared_ptr<Transfer> transfer_;
  std::string what_;
  rest::JsonFramer framer_;
  // A frame (or framing error) taken from the framer by Ready().
  // Its bytes live in the framer until the framer is called again.
  std::optional<StatusOr<std::optional<std::string_view>>> pending_;
  ParseOptions parse_;
  std::string chunk_;
  Status final_;
  bool ended_ = false;
};

class CurlRestClient final : public RestClient {
 public:
  CurlRestClient(RestConfig config, RestClientOptions options, ServerUrl url,
                 std::shared_ptr<rest::Credentials> credentials,
                 std::shared_ptr<rest::Transport> transport)
      : config_(std::move(config)),
        options_(std::move(options)),
        url_(std::move(url)),
        credentials_(std::move(credentials)),
        transport_(std::move(transport)) {}

  StatusOr<std::string> Do(std::string_view method, std::string_view path, std::string_view body,
                           std::string_view content_type) override {
    return Send(method, path, body, content_type, "");
  }

  StatusOr<ObjectPtr> Get(const ResourceRef& resource, std::string_view name) override {
    KCACHE_ASSIGN_OR_RETURN(std::string path, ObjectPath(resource, resource.namespace_, name));
    return Decode(Send("GET", path, "", "", ""), "GET " + path);
  }

  StatusOr<ObjectPtr> Create(const ResourceRef& resource, std::string_view object,
                             const WriteOptions& options) override {
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr parsed, ParseBody(object, "create"));
    ResourceRef collection = resource;
    if (collection.namespaced && collection.namespace_.empty()) {
      if (parsed->namespace_().empty()) {
        return Status::InvalidArgument("create " + resource.gvr.resource +
                                       ": a namespaced object needs a namespace");
      }
      collection.namespace_ = parsed->namespace_();
    }
    std::string path = collection.CollectionPath() + WriteQuery(options);
    return Decode(Send("POST", path, object, "", ""), "POST " + path);
  }

  StatusOr<ObjectPtr> Update(const ResourceRef& resource, std::string_view object,
                             const WriteOptions& options) override {
    return Put(resource, object, "", options);
  }

  StatusOr<ObjectPtr> UpdateStatus(const ResourceRef& resource, std::string_view object,
                                   const WriteOptions& options) override {
    return Put(resource, object, "/status", options);
  }

  StatusOr<ObjectPtr> Patch(const ResourceRef& resource, std::string_view name, PatchType type,
                            std::string_view patch, const PatchOptions& options) override {
    if (type == PatchType::kApply && options.field_manager.empty()) {
      return Status::InvalidArgument("server-side apply of " + std::string(name) +
                                     " needs a field manager");
    }
    KCACHE_ASSIGN_OR_RETURN(std::string path, ObjectPath(resource, resource.namespace_, name));
    if (!options.subresource.empty()) path += "/" + options.subresource;
    std::string query;
    auto add = [&](std::string_view k, std::string_view v) {
      query += query.empty() ? '?' : '&';
      query.append(k).append("=").append(QueryEscape(v));
    };
    if (!options.field_manager.empty()) add("fieldManager", options.field_manager);
    if (options.force) add("force", "true");
    if (options.dry_run) add("dryRun", "All");
    path += query;
    return Decode(Send("PATCH", path, patch, PatchContentType(type), ""), "PATCH " + path);
  }

  Status Delete(const ResourceRef& resource, std::string_view name,
                const DeleteOptions& options) override {
    KCACHE_ASSIGN_OR_RETURN(std::string path, ObjectPath(resource, resource.namespace_, name));
    nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
    if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
    if (!options.propagation_policy.empty()) {
      body["propagationPolicy"] = options.propagation_policy;
    }
    if (!options.precondition_uid.empty()) {
      body["preconditions"]["uid"] = options.precondition_uid;
    }
    if (!options.precondition_resource_version.empty()) {
      body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
    }
    if (options.dry_run) body["dryRun"] = {"All"};
    return Send("DELETE", path, body.dump(), "", "").status();
  }

  StatusOr<ObjectList> List(const ResourceRef& resource, const ListOptions& options) override {
    std::string path = resource.CollectionPath();
    std::string query = EncodeListOptions(options, /*watch=*/false);
    if (!query.empty()) path += "?" + query;
    KCACHE_ASSIGN_OR_RETURN(std::string body, Send("GET", path, "", "", "LIST", options.cancel));
    auto list = rest::DecodeList(std::move(body), options_.parse);
    if (!list.ok()) return list.status().WithContext("LIST " + path);
    return list;
  }

  StatusOr<std::unique_ptr<WatchStream>> Watch(const ResourceRef& resource,
                                               const ListOptions& options) override {
    std::string path = resource.CollectionPath() + "?" + EncodeListOptions(options, /*watch=*/true);
    std::string what = "WATCH " + path;
    for (int attempt = 0;; ++attempt) {
      rest::Request req;
      KCACHE_RETURN_IF_ERROR(Prepare(&req, "GET", path, ""));
      req.timeout = options.timeout_seconds ? std::chrono::seconds(*options.timeout_seconds) +
                                                  options_.watch_deadline_grace
                                            : std::chrono::milliseconds(0);
      req.max_buffered = options_.watch_read_ahead_bytes;
      if (options.allow_watch_bookmarks) req.idle_timeout = options_.watch_idle_timeout;
      auto transfer = transport_->Start(std::move(req));
      StatusOr<int> code = [&] {
        // Until the headers; then the stream's own Cancel() is the way.
        std::stop_callback on_cancel(options.cancel, [&transfer] { transfer->Cancel(); });
        return transfer->WaitHeaders();
      }();
      if (!code.ok()) return code.status().WithContext(what);
      if (*code == 200) {
        return std::unique_ptr<WatchStream>(
            new HttpWatchStream(transport_, std::move(transfer), what, options_));
      }
      Status st = ErrorOf(*transfer, *code, what);
      if (*code == 401 && attempt == 0 && credentials_->Invalidate()) continue;
      return st;
    }
  }

  const RestConfig& config() const override { return config_; }
  uint64_t BytesReceived() const override { return transport_->bytes_received(); }
  bool SharesThreads() const override { return true; }

  std::shared_ptr<RestClient> WithParseOptions(const ParseOptions& parse) override {
    RestClientOptions o = options_;
    o.parse = parse;
    // Views multiplex lists beside other views' watches on one HTTP/2
    // connection, where libcurl 7.88 can stall a gzip-encoded response for
    // good: they do not ask for compression.
    RestConfig config = config_;
    config.disable_compression = true;
    return std::make_shared<CurlRestClient>(std::move(config), std::move(o), url_, credentials_,
                                            transport_);
  }

 private:
  Status Prepare(rest::Request* req, std::string_view method, std::string_view path,
                 std::string_view body, std::string_view content_type = "") {
    req->method = std::string(method);
    req->url = url_.base + std::string(path);
    // A client that drops managedFields asks the server to leave them out
    // (KEP-5958); plain JSON second, for servers that refuse the parameter.
    // Servers that ignore it (v1.20 does) send them, and decoding drops them.
    req->headers.push_back(options_.parse.drop_managed_fields
                               ? "Accept: application/json;drop=metadata.managedFields, "
                                 "application/json"
                               : "Accept: application/json");
    req->headers.push_back("User-Agent: " + options_.user_agent);
    // Over plain HTTP (HTTP/1.1), no "Expect: 100-continue" (libcurl's
    // default for bodies over 1 KiB): it costs a round trip, or a second
    // when the server does not answer it.
    if (url_.base.starts_with("http://")) req->headers.push_back("Expect:");
    if (!body.empty()) {
      if (content_type.empty()) {
        content_type = method == "PATCH" ? "application/merge-patch+json" : "application/json";
      }
      req->headers.push_back("Content-Type: " + std::string(content_type));
      req->body = std::string(body);
    }
    req->connect_timeout = options_.connect_timeout;
    return credentials_->Apply(&req->headers, &req->tls);
  }

  // The path of object `name` in `ns`. A name that would address another
  // path (empty, "..", with a '/') is refused here.
  static StatusOr<std::string> ObjectPath(const ResourceRef& resource, std::string_view ns,
                                          std::string_view name) {
    if (name.empty()) {
      return Status::InvalidArgument(resource.gvr.resource + ": resource name may not be empty");
    }
    if (name.find('/') != std::string_view::npos || name == "." || name == "..") {
      return Status::InvalidArgument(resource.gvr.resource + " \"" + std::string(name) +
                                     "\": a resource name may not be '.', '..' or contain '/'");
    }
    if (resource.namespaced && ns.empty()) {
      return Status::InvalidArgument(resource.gvr.resource + " \"" + std::string(name) +
                                     "\": a namespaced resource needs a namespace");
    }
    ResourceRef in = resource;
    in.namespace_ = std::string(ns);
    return in.CollectionPath() + "/" + QueryEscape(name);
  }

  static std::string WriteQuery(const WriteOptions& options) {
    std::string q;
    if (!options.field_manager.empty()) q += "fieldManager=" + QueryEscape(options.field_manager);
    if (options.dry_run) q += std::string(q.empty() ? "" : "&") + "dryRun=All";
    return q.empty() ? q : "?" + q;
  }

  static std::string_view PatchContentType(PatchType type) {
    switch (type) {
      case PatchType::kJson:
        return "application/json-patch+json";
      case PatchType::kMerge:
        return "application/merge-patch+json";
      case PatchType::kStrategicMerge:
        return "application/strategic-merge-patch+json";
      case PatchType::kApply:
        return "application/apply-patch+yaml";
    }
    return "application/json";
  }

  StatusOr<ObjectPtr> ParseBody(std::string_view object, std::string_view verb) {
    auto parsed = Object::Parse(std::string(object));
    if (!parsed.ok()) return parsed.status().WithContext(std::string(verb) + ": the object");
    return parsed;
  }

  StatusOr<ObjectPtr> Put(const ResourceRef& resource, std::string_view object,
                          std::string_view subresource, const WriteOptions& options) {
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr parsed, ParseBody(object, "update"));
    std::string ns = resource.namespace_.empty() ? parsed->namespace_() : resource.namespace_;
    KCACHE_ASSIGN_OR_RETURN(std::string path, ObjectPath(resource, ns, parsed->name()));
    path += std::string(subresource) + WriteQuery(options);
    return Decode(Send("PUT", path, object, "", ""), "PUT " + path);
  }

  StatusOr<ObjectPtr> Decode(StatusOr<std::string> body, const std::string& what) {
    if (!body.ok()) return body.status();
    auto obj = Object::Parse(*std::move(body), options_.parse);
    if (!obj.ok()) return obj.status().WithContext(what + ": the response");
    return obj;
  }

  Status ErrorOf(Transfer& t, int code, const std::string& what) {
    // Error bodies are small; a huge one is cut rather than held.
    std::string body;
    bool eof = false;
    while (!eof && body.size() < (1 << 20)) {
      if (!t.Read(&body, &eof).ok()) break;
    }
    t.Cancel();
    return rest::StatusFromResponse(code, body, RetryAfterSeconds(t.Header("Retry-After")), what);
  }

  std::vector<StatusOr<std::string>> GetEach(const std::vector<std::string>& paths) override {
    // All started before any is waited for. An answer that Send would
    // retry (401 with credentials to renew, 429 or 5xx with Retry-After)
    // goes through Send from the start, one at a time: rare.
    std::vector<std::shared_ptr<rest::Transfer>> started(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      rest::Request req;
      if (!Prepare(&req, "GET", paths[i], "").ok()) continue;  // Send says why
      req.timeout = options_.request_timeout;
      req.max_buffered = SIZE_MAX;
      req.accept_gzip = !config_.disable_compression;
      started[i] = transport_->Start(std::move(req));
    }
    std::vector<StatusOr<std::string>> out;
    out.reserve(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      const std::string what = "GET " + paths[i];
      if (!started[i]) {
        out.push_back(Send("GET", paths[i], "", "", ""));
        continue;
      }
      rest::Transfer& t = *started[i];
      StatusOr<int> code = t.WaitHeaders();
      if (!code.ok()) {
        out.push_back(code.status().WithContext(what));
      } else if (*code >= 200 && *code < 300) {
        StatusOr<std::string> body = t.ReadAll();
        out.push_back(body.ok() ? std::move(body) : body.status().WithContext(what));
      } else {
        Status st = ErrorOf(t, *code, what);
        const HttpError* http = st.http_error();
        const bool again = *code == 401 || ((*code == 429 || *code >= 500) && http &&
                                            http->retry_after_seconds && options_.max_retries > 0);
        out.push_back(again ? Send("GET", paths[i], "", "", "") : StatusOr<std::string>(st));
      }
    }
    return out;
  }

  // `cancel` ends the request, and its waits between retries, with Cancelled.
  StatusOr<std::string> Send(std::string_view method, std::string_view path, std::string_view body,
                             std::string_view content_type, std::string_view verb,
                             std::stop_token cancel = {}) {
    std::string what = std::string(verb.empty() ? method : verb) + " " + std::string(path);
    bool reauthenticated = false;
    for (int attempt = 0;; ++attempt) {
      rest::Request req;
      KCACHE_RETURN_IF_ERROR(Prepare(&req, method, path, body, content_type));
      req.timeout = options_.request_timeout;
      req.max_buffered = SIZE_MAX;
      // kube-apiserver compresses bodies over 128 KiB when asked; watches
      // are never compressed, and only reads return large bodies, so only
      // GETs ask.
      req.accept_gzip = !config_.disable_compression && method == "GET";
      auto transfer = transport_->Start(std::move(req));
      std::stop_callback on_cancel(cancel, [&transfer] { transfer->Cancel(); });
      auto code = transfer->WaitHeaders();
      if (!code.ok()) return code.status().WithContext(what);
      if (*code >= 200 && *code < 300) {
        auto out = transfer->ReadAll();
        if (!out.ok()) return out.status().WithContext(what);
        return out;
      }
      Status st = ErrorOf(*transfer, *code, what);
      if (*code == 401 && !reauthenticated && credentials_->Invalidate()) {
        reauthenticated = true;
        continue;
      }
      const HttpError* http = st.http_error();
      bool retriable = (*code == 429 || *code >= 500) && http && http->retry_after_seconds;
      if (!retriable || attempt >= options_.max_retries) return st;
      auto wait = std::min<std::chrono::milliseconds>(
          std::chrono::seconds(*http->retry_after_seconds), options_.max_retry_wait);
      if (!exec::SleepUntil(std::chrono::steady_clock::now() + wait, cancel))
        return Status::Cancelled(what + ": cancelled");
    }
  }

  const RestConfig config_;
  const RestClientOptions options_;
  const ServerUrl url_;
  const std::shared_ptr<rest::Credentials> credentials_;  // shared with views

  std::shared_ptr<rest::Transport> transport_;
};

}  // namespace

std::string EncodeListOptions(const ListOptions& o, bool watch) {
  std::string q;
  auto add = [&](std::string_view name, std::string_view value) {
    if (!q.empty()) q += '&';
    q.append(name).append("=").append(QueryEscape(value));
  };
  if (watch) add("watch", "true");
  if (!o.label_selector.empty()) add("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) add("fieldSelector", o.field_selector);
  if (!o.resource_version.empty()) add("resourceVersion", o.resource_version);
  if (!o.resource_version_match.empty()) add("resourceVersionMatch", o.resource_version_match);
  if (o.limit > 0) add("limit", std::to_string(o.limit));
  if (!o.continue_token.empty()) add("continue", o.continue_token);
  if (o.timeout_seconds) add("timeoutSeconds", std::to_string(*o.timeout_seconds));
  if (o.allow_watch_bookmarks) add("allowWatchBookmarks", "true");
  if (o.send_initial_events) add("sendInitialEvents", *o.send_initial_events ? "true" : "false");
  return q;
}

StatusOr<std::shared_ptr<RestClient>> RestClient::Create(const RestConfig& config,
                                                         const RestClientOptions& options) {
  if (config.server.empty()) return Status::InvalidArgument("no server in the configuration");
  KCACHE_ASSIGN_OR_RETURN(ServerUrl url, ParseServer(config));
  KCACHE_ASSIGN_OR_RETURN(auto credentials,
                          rest::Credentials::Create(config, options.token_file_refresh,
                                                    options.exec_timeout, url.connect_to));
  KCACHE_ASSIGN_OR_RETURN(auto transport, rest::Transport::Create(config.proxy_url));
  RestClientOptions o = options;
  if (o.user_agent.empty()) o.user_agent = "kcache/0.1.0";
  return std::shared_ptr<RestClient>(new CurlRestClient(
      config, std::move(o), std::move(url), std::move(credentials), std::move(transport)));
}

std::vector<StatusOr<std::string>> RestClient::GetEach(const std::vector<std::string>& paths) {
  std::vector<StatusOr<std::string>> out;
  out.reserve(paths.size());
  for (const std::string& path : paths) out.push_back(Get(path));
  return out;
}

ListPager RestClient::Pager(const ResourceRef& resource, ListPagerOptions options) {
  return ListPager([this, resource](const ListOptions& o) { return List(resource, o); }, options);
}

}  // namespace kcache
