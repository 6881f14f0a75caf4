// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/serve_cache.h"

#include <signal.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <shared_mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/resource_version.h"
#include "exec/fiber.h"
#include "kcache/cache.h"
#include "kcache/encryption.h"
#include "tools/kcache/apiserver/api_query.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/api_serve.h"
#include "tools/kcache/apiserver/api_source.h"
#include "tools/kcache/apiserver/event_window.h"
#include "tools/kcache/apiserver/foreground.h"
#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/apiserver/tables.h"
#include "tools/kcache/command.h"
#include "tools/kcache/kubectl/tables.h"
#include "tools/kcache/source.h"
#include "tools/kcache/token_grants.h"
#include "util/rw_mutex.h"
#include "util/scope_guard.h"

namespace kcache::tool {
namespace {

using serve::Output;
using serve::Query;
using serve::Reply;
using serve::ResourceType;
using serve::SendReply;
using serve::Target;
using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

// How long a request for a resourceVersion the cache has not reached waits
// for it before 504 (the apiserver's watch cache waits 3 s).
constexpr auto kTooLargeWait = std::chrono::seconds(3);

// The fields the apiserver's field label conversion accepts per resource
// (Kubernetes 1.20), besides metadata.name and metadata.namespace: those of
// the synthetic cluster's built-in types, and of a few more.
std::vector<std::string> SelectableFields(const std::string& group, const std::string& resource) {
  for (const ResourceType& rt : serve::BuiltinResourceTypes()) {
    if (rt.group == group && rt.resource == resource) return rt.fields;
  }
  static const std::map<std::pair<std::string, std::string>, std::vector<std::string>> kFields = {
      {{"", "replicationcontrollers"}, {"status.replicas"}},
      {{"apps", "replicasets"}, {"status.replicas"}},
      {{"batch", "jobs"}, {"status.successful"}},
      {{"certificates.k8s.io", "certificatesigningrequests"}, {"spec.signerName"}},
      {{"", "events"},
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}},
  };
  auto it = kFields.find({group, resource});
  return it == kFields.end() ? std::vector<std::string>{} : it->second;
}

// True for 127.0.0.0/8, ::1, "localhost" and unix sockets (which file
// permissions guard).
bool IsLoopback(std::string_view host_port) {
  if (host_port.starts_with("unix:")) return true;
  std::string host(host_port.substr(0, host_port.rfind(':')));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

// A failure of the cache library as the front end must read it: an expiry
// stays one (410); anything else is the server's own failure (500), whatever
// its code, since the front end gives some codes a meaning of their own.
Status ServerError(const Status& st) {
  return st.code() == StatusCode::kExpired ? st : Status::Internal(st.message());
}

}  // namespace

// One served resource.
struct ServedType {
  std::string keyspace;
  std::shared_ptr<Indexer> store;
  std::optional<TableSpec> table;  // unset if the spec could not be built
  // The recent changes, shared by the watches that follow them.
  std::unique_ptr<serve::EventWindow> window = std::make_unique<serve::EventWindow>();
};

// A watch behind the shared window reads the journal itself, this many
// changes at a time, so that each costs little memory however many fall
// behind.
constexpr size_t kBehindWindowBatch = 64;

// The objects of one keyspace as of one resourceVersion: the store as it
// is now, with the keys that changed since restored from the journal.
class CacheCursor : public serve::ListCursor {
 public:
  uint64_t version = 0;
  std::string prefix;  // keys in scope start with it ("ns/"), or ""
  bool cluster_scoped = false;
  std::function<bool(const Object&)> filter;  // null: everything
  std::unique_ptr<ObjectIterator> now;
  // State at `version` of the keys changed since (null: absent then), in
  // scope.
  std::map<std::string, ObjectPtr, std::less<>> past;

  uint64_t rv() const override { return version; }

  StatusOr<bool> Next(std::string* key, ObjectPtr* object) override {
    for (;;) {
      KCACHE_ASSIGN_OR_RETURN(bool more, NextInScope(key, object));
      if (!more) return false;
      // A cluster-scoped type holds no namespaced key.
      if (cluster_scoped && key->find('/') != std::string::npos) continue;
      if (!filter || filter(**object)) return true;
    }
  }

  bool InScope(std::string_view key) const { return key.substr(0, prefix.size()) == prefix; }

 private:
  // The next object in key order; false at the end.
  StatusOr<bool> NextInScope(std::string* key, ObjectPtr* object) {
    for (;;) {
      if (!started_) {
        started_ = true;
        past_it_ = past.begin();
      }
      const bool have_now = now->Valid() && InScope(now->key());
      if (!have_now) KCACHE_RETURN_IF_ERROR(now->status());
      const bool have_past = past_it_ != past.end();
      if (!have_now && !have_past) return false;
      const bool take_past = have_past && (!have_now || past_it_->first <= now->key());
      if (take_past) {
        if (have_now && past_it_->first == now->key()) now->Next();
        auto it = past_it_++;
        if (!it->second) continue;  // absent at the version
        *key = it->first;
        *object = it->second;
        return true;
      }
      *key = now->key();
      *object = now->object();
      now->Next();
      return true;
    }
  }

  bool started_ = false;
  std::map<std::string, ObjectPtr, std::less<>>::iterator past_it_;
};

// The served cache is the source of the API front end's lists and watches.
class CacheServer::Impl : public serve::ApiSource {
 public:
  Impl(std::unique_ptr<Source> source, CacheServeOptions options)
      : source_(std::move(source)), options_(std::move(options)) {}

  Status Load();
  Status Listen();
  void Stop();

  // ApiSource. A version the cache has not reached is waited for, up to
  // 3 s, as the apiserver's watch cache does.
  StatusOr<std::unique_ptr<serve::ListCursor>> OpenList(int type,
                                                        const serve::ListRequest& request) override;
  Status Reach(int type, uint64_t rv, uint64_t* current) override;
  StatusOr<serve::ChangeBatch> Changes(int type, uint64_t after, size_t max,
                                       Clock::time_point until) override;

  std::unique_ptr<Source> source_;
  const CacheServeOptions options_;
  std::vector<TokenGrant> grants_;  // empty: no token needed
  std::vector<ResourceType> types_;
  std::vector<ServedType> served_;
  std::vector<std::string> skipped_;
  std::unique_ptr<serve::http::Server> http_;

  // "HOST:PORT" as bound; requests may read it while Listen sets it.
  std::string address() const {
    std::lock_guard<std::mutex> lock(address_mu_);
    return address_;
  }

 private:
  mutable std::mutex address_mu_;
  std::string address_;  // guarded by address_mu_

  void Handle(const serve::http::Request& req, serve::http::ResponseWriter& w);
  // Counts a watch of `client` while it lives; false beyond
  // max_watches_per_client.
  bool OpenWatch(const std::string& client);
  void CloseWatch(const std::string& client);
  std::mutex watches_mu_;
  std::map<std::string, size_t> watches_;  // open watches by client; guarded by watches_mu_
  void Get(const Target& t, const Output& out, serve::http::ResponseWriter& w);
  // Waits until `type` has reached `wanted` (up to kTooLargeWait) and
  // returns with `lock` held on the view and `*current` set.
  Status AwaitVersion(int type, uint64_t wanted, std::shared_lock<RWMutex>* lock,
                      uint64_t* current);

  void RefreshLoop();
  // Waits until a refresh after `generation`, or `until`.
  uint64_t WaitRefresh(uint64_t generation, Clock::time_point until);
  uint64_t generation() const;

  // Held shared while a request reads the cache's view (the resume point,
  // the journal and an iterator's start must see the same one), exclusively
  // while the view catches up with the writer.
  mutable RWMutex view_mu_;
  mutable std::mutex refresh_mu_;
  // Requests wait on it on their connections' fibers.
  exec::CondVar refreshed_;
  uint64_t generation_ = 0;  // guarded by refresh_mu_
  bool stopping_ = false;    // guarded by refresh_mu_
  // Expired once the cache directory holds another cache, or none: nothing
  // is served from then on.
  Status gone_;  // guarded by refresh_mu_
  std::thread refresher_;

 public:
  Status Gone() const {
    std::lock_guard<std::mutex> lock(refresh_mu_);
    return gone_;
  }
};

Status CacheServer::Impl::Load() {
  KCACHE_ASSIGN_OR_RETURN(const EncryptionStatus encryption, GetEncryptionStatus(source_->cache()));
  KCACHE_ASSIGN_OR_RETURN(const std::string key, GivenKeyEncryptionKey());
  for (const KeyspaceStats& ks : source_->keyspaces()) {
    if (!ks.resource) {
      skipped_.push_back(ks.name + ": no resource recorded (synced by an older kcache)");
      continue;
    }
    const ResourceInfo& info = *ks.resource;
    if (info.group.empty() && info.resource == "secrets" && !options_.serve_secrets) {
      skipped_.push_back(ks.name + ": secrets are served only with --serve-secrets");
      continue;
    }
    if (key.empty() && std::find(encryption.keyspaces.begin(), encryption.keyspaces.end(),
                                 ks.name) != encryption.keyspaces.end()) {
      skipped_.push_back(ks.name +
                         ": encrypted at rest, served only with its key (--encryption-key-file, "
                         "--encryption-key-env or --encryption-key-exec)");
      continue;
    }
    ResourceType rt;
    static_cast<ApiResource&>(rt) = info;
    if (rt.singular.empty()) {
      for (char c : info.kind) rt.singular += static_cast<char>(std::tolower(c));
    }
    rt.fields = SelectableFields(info.group, info.resource);
    ServedType st;
    st.keyspace = ks.name;
    KCACHE_ASSIGN_OR_RETURN(st.store, source_->Keyspace(ks.name));
    if (StatusOr<TableSpec> spec = TableSpec::For(info); spec.ok()) st.table = std::move(*spec);
    types_.push_back(std::move(rt));
    served_.push_back(std::move(st));
  }
  if (types_.empty()) {
    return Status::FailedPrecondition("cache " + source_->path() +
                                      " holds no resource that can be served" +
                                      (skipped_.empty() ? "" : " (" + skipped_[0] + ")"));
  }
  return Status::OK();
}

Status CacheServer::Impl::Listen() {
  refresher_ = std::thread([this] { RefreshLoop(); });
  auto handler = [this](const serve::http::Request& req, serve::http::ResponseWriter& w) {
    Handle(req, w);
  };
  // TLS comes from the files alone (the loopback rule in Start reads them).
  serve::http::ServerOptions server_options = options_.http;
  server_options.tls.reset();
  if (!options_.tls_cert_file.empty()) {
    server_options.tls = serve::http::TlsFiles{options_.tls_cert_file, options_.tls_key_file};
  }
  // A connection is a fiber: every wait of Handle is on the socket or on
  // refreshed_, and no lock is held across one (view_mu_ is taken and let go
  // between them).
  server_options.fibers = true;
  StatusOr<std::unique_ptr<serve::http::Server>> http =
      serve::http::Server::Start(options_.listen, handler, server_options);
  if (!http.ok()) {
    Stop();
    return http.status();
  }
  http_ = std::move(http).value();
  std::lock_guard<std::mutex> lock(address_mu_);
  address_ = http_->url().substr(http_->url().find("://") + 3);
  return Status::OK();
}

void CacheServer::Impl::Stop() {
  {
    std::lock_guard<std::mutex> lock(refresh_mu_);
    stopping_ = true;
  }
  refreshed_.notify_all();  // wakes the watches, which then see the server stopping
  if (http_) http_->Stop();
  if (refresher_.joinable()) refresher_.join();
}

void CacheServer::Impl::RefreshLoop() {
  std::unique_lock<std::mutex> lock(refresh_mu_);
  while (!stopping_) {
    refreshed_.wait_for(lock, options_.refresh_interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    Status st;
    {
      std::unique_lock<RWMutex> view(view_mu_);
      st = source_->cache().Refresh();
    }
    lock.lock();
    if (st.code() == StatusCode::kExpired) {
      // The cache was removed or replaced: serving its last view would be
      // serving a cache that is no more. Watches end; requests get 503.
      gone_ = st;
      stopping_ = true;
      refreshed_.notify_all();
      lock.unlock();
      if (options_.on_cache_gone) options_.on_cache_gone(st);
      return;
    }
    // A failed catch-up is retried on the next tick; until then requests
    // see the last good view.
    if (st.ok()) ++generation_;
    refreshed_.notify_all();
  }
}

uint64_t CacheServer::Impl::generation() const {
  std::lock_guard<std::mutex> lock(refresh_mu_);
  return generation_;
}

uint64_t CacheServer::Impl::WaitRefresh(uint64_t generation, Clock::time_point until) {
  std::unique_lock<std::mutex> lock(refresh_mu_);
  refreshed_.wait_until(lock, until, [&] { return stopping_ || generation_ != generation; });
  return generation_;
}

void CacheServer::Impl::Handle(const serve::http::Request& req, serve::http::ResponseWriter& w) {
  // A kubelet's probes carry no token (kube-apiserver lets anyone ask, by
  // system:public-info-viewer): /readyz is 503 once the cache is gone.
  if (req.method == "GET" &&
      (req.path == "/healthz" || req.path == "/livez" || req.path == "/readyz")) {
    const serve::http::Headers text = {{"Content-Type", "text/plain; charset=utf-8"}};
    if (Status gone = Gone(); !gone.ok() && req.path == "/readyz") {
      return (void)w.Send(503, text, std::string(gone.message()) + "\n");
    }
    return (void)w.Send(200, text, "ok");
  }
  const TokenGrant* grant = nullptr;
  if (!grants_.empty()) {
    grant = FindGrant(grants_, req.Header("Authorization"));
    if (!grant) return SendReply(w, {401, "Unauthorized", "Unauthorized", ""});
  }
  // Discovery lists what the token may read (every token may ask, as
  // kube-apiserver's system:discovery role lets every user).
  std::vector<ResourceType> visible;
  auto discovered = [&]() -> const std::vector<ResourceType>& {
    if (!grant) return types_;
    visible.clear();
    for (const ResourceType& rt : types_) {
      if (grant->Reads(rt)) visible.push_back(rt);
    }
    return visible;
  };
  if (Status gone = Gone(); !gone.ok()) {
    return SendReply(w, {503, "ServiceUnavailable", std::string(gone.message()), ""});
  }
  const std::string& path = req.path;
  const serve::http::Headers json = {{"Content-Type", "application/json"}};
  if (req.method == "GET") {
    if (path == "/api" || path == "/api/") {
      return (void)w.Send(200, json, serve::ApiVersionsJson(address()));
    }
    if (path == "/apis" || path == "/apis/") {
      return (void)w.Send(200, json, serve::ApiGroupListJson(discovered()));
    }
    if (path == "/version") {
      StatusOr<std::optional<ClusterInfo>> cluster = source_->cache().GetClusterInfo();
      std::string git =
          cluster.ok() && *cluster && !(*cluster)->version.empty() ? (*cluster)->version : "v0.0.0";
      std::string major = "0", minor = "0";
      if (size_t dot = git.find('.'); git.size() > 1 && git[0] == 'v' && dot != std::string::npos) {
        major = git.substr(1, dot - 1);
        size_t end = git.find_first_not_of("0123456789", dot + 1);
        minor = git.substr(dot + 1, end == std::string::npos ? end : end - dot - 1);
      }
      ojson v = {
          {"major", major}, {"minor", minor}, {"gitVersion", git}, {"platform", "linux/amd64"}};
      return (void)w.Send(200, json, v.dump());
    }
  }
  Target t;
  switch (serve::ParseTarget(types_, path, &t)) {
    case serve::PathKind::kNotFound:
      return serve::SendNotFoundPage(w);
    case serve::PathKind::kResourceList:
      if (req.method != "GET") return serve::SendNotFoundPage(w);
      return (void)w.Send(200, json,
                          serve::ApiResourceListJson(discovered(), t.group, t.version,
                                                     /*read_only=*/true));
    case serve::PathKind::kResource:
      break;
  }
  if (grant) {
    // The verb as kube-apiserver's authorizer names it (writes are refused
    // below, after the grant is checked, as RBAC comes first there too).
    const bool watch = t.legacy_watch || serve::ParseBool(req.Query("watch").value_or("false"));
    const bool one = !t.name.empty();
    const char* verb = req.method == "POST"     ? "create"
                       : req.method == "PUT"    ? "update"
                       : req.method == "PATCH"  ? "patch"
                       : req.method == "DELETE" ? (one ? "delete" : "deletecollection")
                       : one                    ? "get"
                       : watch                  ? "watch"
                                                : "list";
    if (std::optional<Reply> no = grant->Check(*t.rt, verb, t.namespace_, t.name)) {
      return SendReply(w, *no);
    }
  }
  if (req.method != "GET" || (t.legacy_watch && !t.name.empty())) {
    if (req.method == "GET") return serve::SendNotFoundPage(w);
    return SendReply(w, {405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""});
  }
  Output out;
  if (std::optional<Reply> bad = serve::ParseOutput(req, &out)) return SendReply(w, *bad);
  if (!t.name.empty()) return Get(t, out, w);
  Query q;
  if (std::optional<Reply> bad = serve::ParseQuery(req, t, &q)) return SendReply(w, *bad);
  const ServedType& st = served_[static_cast<size_t>(t.type)];
  serve::TableRows rows(st.table ? &*st.table : nullptr, out);
  const serve::TableWriter* tables = out.tables() ? &rows : nullptr;
  if (!q.watch) {
    return (void)serve::ServeList(
        *this, t, q, {.tables = tables, .drop_managed_fields = out.drop_managed_fields}, w);
  }
  const std::string client = grant ? "user " + serve::Quote(grant->user) : "address " + req.peer;
  if (!OpenWatch(client)) {
    return SendReply(w, {429, "TooManyRequests",
                         "too many watches open from " + client + " (at most " +
                             std::to_string(options_.max_watches_per_client) + ")",
                         "", 1});
  }
  util::ScopeGuard closer([&] { CloseWatch(client); });
  serve::WatchCall call;
  call.bookmark_interval = options_.bookmark_interval;
  call.default_timeout = options_.default_watch_timeout;
  call.tables = tables;
  call.drop_managed_fields = out.drop_managed_fields;
  serve::ServeWatch(*this, t, q, call, w);
}

bool CacheServer::Impl::OpenWatch(const std::string& client) {
  std::lock_guard<std::mutex> lock(watches_mu_);
  size_t& open = watches_[client];  // at least 1 once added: Start refuses a limit of 0
  if (open >= options_.max_watches_per_client) return false;
  ++open;
  return true;
}

void CacheServer::Impl::CloseWatch(const std::string& client) {
  std::lock_guard<std::mutex> lock(watches_mu_);
  auto it = watches_.find(client);
  if (it != watches_.end() && --it->second == 0) watches_.erase(it);
}

void CacheServer::Impl::Get(const Target& t, const Output& out, serve::http::ResponseWriter& w) {
  const ServedType& st = served_[static_cast<size_t>(t.type)];
  const std::string key = t.rt->namespaced ? t.namespace_ + "/" + t.name : t.name;
  StatusOr<ObjectPtr> o = [&] {
    std::shared_lock<RWMutex> view(view_mu_);
    return st.store->GetByKey(key);
  }();
  if (!o.ok()) {
    return SendReply(w, {500, "InternalError",
                         "Internal error occurred: " + std::string(o.status().message()), ""});
  }
  if (!*o) return SendReply(w, serve::NotFound(*t.rt, t.name));
  serve::SendObject(w, *o, st.table ? &*st.table : nullptr, out);
}

Status CacheServer::Impl::AwaitVersion(int type, uint64_t wanted, std::shared_lock<RWMutex>* lock,
                                       uint64_t* current) {
  const ServedType& st = served_[static_cast<size_t>(type)];
  const auto give_up = Clock::now() + kTooLargeWait;
  uint64_t gen = generation();
  for (;;) {
    *lock = std::shared_lock<RWMutex>(view_mu_);
    StatusOr<KeyspaceStats> read = source_->cache().Stats(st.keyspace);
    if (!read.ok()) return ServerError(read.status());
    const KeyspaceStats& stats = *read;
    *current = ParseCanonicalResourceVersion(stats.resource_version).value_or(0);
    if (stats.relist_in_progress || stats.resource_version.empty()) {
      return Status::Unavailable("storage is (re)initializing");
    }
    if (!ParseCanonicalResourceVersion(stats.resource_version)) {
      return Status::Internal("resourceVersion " + serve::Quote(stats.resource_version) +
                              " is not a number: cannot serve it");
    }
    if (wanted <= *current) return Status::OK();
    lock->unlock();
    if (Clock::now() >= give_up) {
      return Status::DeadlineExceeded("resourceVersion " + std::to_string(wanted) + " not reached");
    }
    gen = WaitRefresh(gen, give_up);
  }
}

Status CacheServer::Impl::Reach(int type, uint64_t rv, uint64_t* current) {
  std::shared_lock<RWMutex> lock;
  return AwaitVersion(type, rv, &lock, current);
}

StatusOr<std::unique_ptr<serve::ListCursor>> CacheServer::Impl::OpenList(
    int type, const serve::ListRequest& request) {
  using Read = serve::ListPlan::Read;
  const ServedType& st = served_[static_cast<size_t>(type)];
  const serve::ListPlan& plan = request.plan;
  std::shared_lock<RWMutex> lock;
  uint64_t current = 0;
  KCACHE_RETURN_IF_ERROR(
      AwaitVersion(type, plan.read == Read::kCurrent ? 0 : plan.rv, &lock, &current));
  auto cursor = std::make_unique<CacheCursor>();
  cursor->version = current;
  cursor->cluster_scoped = !types_[static_cast<size_t>(type)].namespaced;
  cursor->prefix = request.namespace_.empty() ? "" : request.namespace_ + "/";
  cursor->filter = request.filter;
  if (plan.read == Read::kExact && plan.rv != current) {
    // Undo the changes after the version, newest last: the first change of
    // a key after it tells its state then.
    std::string after = std::to_string(plan.rv);
    for (;;) {
      StatusOr<JournalRead> journal = source_->cache().ReadJournal(st.keyspace, after, 4096);
      if (!journal.ok()) return ServerError(journal.status());
      JournalRead& read = *journal;
      for (JournalEvent& e : read.events) {
        if (e.key < plan.start || !cursor->InScope(e.key) || cursor->past.count(e.key)) continue;
        if (e.type == JournalEvent::Type::kModified && !e.previous) {
          return Status::Expired("the journal has no earlier state of " + e.key);
        }
        cursor->past.emplace(e.key, e.type == JournalEvent::Type::kAdded      ? nullptr
                                    : e.type == JournalEvent::Type::kModified ? e.previous
                                                                              : e.object);
      }
      after = read.resource_version;
      if (!read.more) break;
    }
    cursor->version = plan.rv;
  }
  cursor->now = st.store->NewIteratorFrom(std::max(plan.start, cursor->prefix));
  return std::unique_ptr<serve::ListCursor>(std::move(cursor));
}

StatusOr<serve::ChangeBatch> CacheServer::Impl::Changes(int type, uint64_t after, size_t max,
                                                        Clock::time_point until) {
  const ServedType& st = served_[static_cast<size_t>(type)];
  Cache& cache = source_->cache();
  // Reads the journal after `from`, at most `limit` changes.
  auto read_journal = [&](uint64_t from, size_t limit) -> StatusOr<serve::ChangeBatch> {
    StatusOr<JournalRead> read = cache.ReadJournal(st.keyspace, std::to_string(from), limit);
    if (!read.ok() && read.status().code() == StatusCode::kExpired) {
      // A watcher that fell behind the journal's window, or from before a
      // relist: the journal's start is where a watch may begin.
      StatusOr<KeyspaceStats> stats = cache.Stats(st.keyspace);
      return Status::Expired(stats.ok() ? stats->journal.start : "");
    }
    if (!read.ok()) return ServerError(read.status());
    serve::ChangeBatch batch;
    batch.position = ParseCanonicalResourceVersion(read->resource_version).value_or(from);
    batch.events.reserve(read->events.size());
    for (JournalEvent& e : read->events) {
      serve::SourceEvent event;
      event.type = e.type == JournalEvent::Type::kAdded      ? serve::EventType::kAdded
                   : e.type == JournalEvent::Type::kModified ? serve::EventType::kModified
                                                             : serve::EventType::kDeleted;
      event.rv = ParseCanonicalResourceVersion(e.resource_version).value_or(0);
      event.object = std::move(e.object);
      if (e.type != JournalEvent::Type::kAdded) event.prev = std::move(e.previous);
      batch.events.push_back(std::move(event));
    }
    return batch;
  };
  uint64_t gen = generation();
  for (;;) {
    {
      std::shared_lock<RWMutex> lock(view_mu_);
      StatusOr<std::optional<serve::ChangeBatch>> shared =
          st.window->Read(after, max, gen, read_journal);
      if (!shared.ok()) return shared.status();
      StatusOr<serve::ChangeBatch> batch =
          *shared ? std::move(**shared) : read_journal(after, std::min(max, kBehindWindowBatch));
      if (!batch.ok()) return batch.status();
      if (!batch->events.empty() || batch->position != after) return batch;
    }
    if (Clock::now() >= until) return serve::ChangeBatch{{}, after};
    gen = WaitRefresh(gen, until);
    std::lock_guard<std::mutex> lock(refresh_mu_);
    if (stopping_) return Status::Cancelled("the server is stopping");
  }
}

CacheServer::CacheServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CacheServer::~CacheServer() { Stop(); }

StatusOr<std::unique_ptr<CacheServer>> CacheServer::Start(const std::string& cache_dir,
                                                          const std::string& snapshot,
                                                          const CacheServeOptions& options) {
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  if (tls && (options.tls_cert_file.empty() || options.tls_key_file.empty())) {
    return Status::InvalidArgument(
        "--tls-cert-file and --tls-private-key-file go together: name both");
  }
  if (!IsLoopback(options.listen) && (!tls || options.token_file.empty())) {
    return Status::InvalidArgument(
        "--listen " + options.listen +
        ": kcache serve listens on loopback addresses (127.0.0.1, ::1, localhost) unless it "
        "serves TLS (--tls-cert-file, --tls-private-key-file) and requires tokens "
        "(--token-file)");
  }
  if (options.max_watches_per_client == 0) {
    return Status::InvalidArgument("max_watches_per_client must be positive");
  }
  if (options.refresh_interval.count() <= 0 || options.bookmark_interval.count() <= 0) {
    return Status::InvalidArgument("refresh and bookmark intervals must be positive");
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, Source::Open(cache_dir, snapshot));
  auto impl = std::make_unique<Impl>(std::move(source), options);
  if (!options.token_file.empty()) {
    KCACHE_ASSIGN_OR_RETURN(impl->grants_, ReadTokenGrants(options.token_file));
  }
  KCACHE_RETURN_IF_ERROR(impl->Load());
  KCACHE_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<CacheServer>(new CacheServer(std::move(impl)));
}

std::string CacheServer::url() const { return impl_->http_ ? impl_->http_->url() : ""; }

const std::vector<ResourceType>& CacheServer::types() const { return impl_->types_; }

const std::vector<std::string>& CacheServer::skipped() const { return impl_->skipped_; }

Status CacheServer::Gone() const { return impl_->Gone(); }

void CacheServer::Stop() {
  if (impl_) impl_->Stop();
}

Status RunServeCache(const std::string& cache_dir, const std::string& snapshot,
                     const CacheServeOptions& options, std::ostream& out) {
  serve::StopSignals signals;
  CacheServeOptions o = options;
  // Ends the wait below: the signals are blocked in every thread.
  o.on_cache_gone = [](const Status&) { ::kill(::getpid(), SIGTERM); };
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<CacheServer> server,
                          CacheServer::Start(cache_dir, snapshot, o));
  out << "kcache serve: " << (snapshot.empty() ? "cache " + cache_dir : "snapshot " + snapshot)
      << ", " << server->types().size() << " resources, read-only"
      << (options.tls_cert_file.empty() ? "" : ", TLS")
      << (options.token_file.empty() ? "" : ", bearer tokens required") << "\n";
  for (const std::string& s : server->skipped()) out << "  not served: " << s << "\n";
  out << serve::ServingLine(server->url());
  out.flush();
  const char* sig = signals.Wait();
  if (Status gone = server->Gone(); !gone.ok()) {
    server->Stop();
    return gone;
  }
  out << "kcache serve: " << sig << ", stopping\n";
  out.flush();
  server->Stop();
  return Status::OK();
}

}  // namespace kcache::tool
