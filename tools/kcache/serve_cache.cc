#include "tools/kcache/serve_cache.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
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
#include "kcache/cache.h"
#include "tools/kcache/apiserver/api_query.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/kubectl/tables.h"
#include "tools/kcache/source.h"
#include "tools/kcache/testcluster/server.h"
#include "util/rw_mutex.h"
#include "util/scope_guard.h"

namespace kcache::tool {
namespace {

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
// Journal entries read per call, and events per watch write.
constexpr size_t kJournalBatch = 512;

// The fields the apiserver's field label conversion accepts per resource
// (Kubernetes 1.20), besides metadata.name and metadata.namespace: those of
// the synthetic cluster's built-in types, and of a few more.
std::vector<std::string> SelectableFields(const std::string& group, const std::string& resource) {
  for (const ResourceType& rt : serve::BuiltinResourceTypes()) {
    if (rt.group == group && rt.resource == resource) return rt.fields;
  }
  static const std::map<std::pair<std::string, std::string>, std::vector<std::string>> kFields = {
      {{"", "secrets"}, {"type"}},
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

// Compares without leaking, through timing, how much of a token matched.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

StatusOr<std::vector<std::string>> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("token file " + path + ": cannot be read");
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line[0] != '#') tokens.push_back(line);
  }
  if (tokens.empty()) return Status::InvalidArgument("token file " + path + " holds no token");
  return tokens;
}

// The Table version a request asks for in its Accept header ("" for none):
// kubectl asks "application/json;as=Table;v=v1;g=meta.k8s.io, ...".
std::string TableVersion(const std::string& accept) {
  size_t pos = 0;
  while (pos < accept.size()) {
    size_t end = accept.find(',', pos);
    if (end == std::string::npos) end = accept.size();
    std::string_view media(accept.data() + pos, end - pos);
    if (media.find("as=Table") != std::string_view::npos &&
        media.find("g=meta.k8s.io") != std::string_view::npos) {
      if (media.find("v=v1beta1") != std::string_view::npos) return "v1beta1";
      if (media.find("v=v1") != std::string_view::npos) return "v1";
    }
    pos = end + 1;
  }
  return "";
}

}  // namespace

// One served resource.
struct ServedType {
  std::string keyspace;
  std::shared_ptr<Indexer> store;
  std::optional<TableSpec> table;  // unset if the spec could not be built
};

// How a request wants objects written: as themselves, or as Table rows.
struct Output {
  std::string table_version;   // "" for objects
  std::string include_object;  // Table rows: "Metadata", "Object" or "None"
  bool tables() const { return !table_version.empty(); }
};

class CacheServer::Impl {
 public:
  Impl(std::unique_ptr<Source> source, CacheServeOptions options)
      : source_(std::move(source)), options_(std::move(options)) {}

  Status Load();
  Status Listen();
  void Stop();

  std::unique_ptr<Source> source_;
  const CacheServeOptions options_;
  std::vector<std::string> tokens_;
  std::vector<ResourceType> types_;
  std::vector<ServedType> served_;
  std::vector<std::string> skipped_;
  std::unique_ptr<http::Server> http_;

  // "HOST:PORT" as bound; requests may read it while Listen sets it.
  std::string address() const {
    std::lock_guard<std::mutex> lock(address_mu_);
    return address_;
  }

 private:
  mutable std::mutex address_mu_;
  std::string address_;  // guarded by address_mu_

  // The objects of one keyspace as of one resourceVersion: the store as it
  // is now, with the keys that changed since restored from the journal.
  class ListView;

  void Handle(const http::Request& req, http::ResponseWriter& w);
  void Get(const Target& t, const Output& out, http::ResponseWriter& w);
  void List(const Target& t, const Query& q, const Output& out, http::ResponseWriter& w);
  void Watch(const Target& t, const Query& q, const Output& out, http::ResponseWriter& w);
  // Opens `view` of `t`'s keyspace as of `at` (current if unset), with
  // objects from `start` in `t`'s namespace, once the keyspace has reached
  // `not_older_than`. The error reply if it cannot.
  std::optional<Reply> OpenView(const Target& t, const std::optional<std::string>& at,
                                const std::string& not_older_than, const std::string& start,
                                ListView* view);
  // The Table document's opening up to its rows, or the object list's up to
  // its items.
  std::string ListHead(const Target& t, const Output& out, const std::string& rv,
                       const std::string& continue_token, bool columns) const;
  // One object as `out` writes it: itself, or a Table row.
  std::string Item(const Target& t, const Output& out, const Object& o,
                   std::chrono::system_clock::time_point now) const;

  void RefreshLoop();
  // Waits until a refresh after `generation`, or `until`.
  uint64_t WaitRefresh(uint64_t generation, Clock::time_point until);
  uint64_t generation() const;

  // Held shared while a request reads the cache's view (the resume point,
  // the journal and an iterator's start must see the same one), exclusively
  // while the view catches up with the writer.
  mutable RWMutex view_mu_;
  mutable std::mutex refresh_mu_;
  std::condition_variable refreshed_;
  uint64_t generation_ = 0;  // guarded by refresh_mu_
  bool stopping_ = false;    // guarded by refresh_mu_
  std::thread refresher_;
};

class CacheServer::Impl::ListView {
 public:
  std::string rv;
  std::string prefix;  // keys in scope start with it ("ns/"), or ""
  bool cluster_scoped = false;
  std::unique_ptr<ObjectIterator> now;
  // State at `rv` of the keys changed since (null: absent then), in scope.
  std::map<std::string, ObjectPtr, std::less<>> past;

  // The next object in key order; false at the end.
  StatusOr<bool> Next(std::string* key, ObjectPtr* object) {
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
        if (!it->second) continue;  // absent at rv
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

  bool InScope(std::string_view key) const { return key.substr(0, prefix.size()) == prefix; }

 private:
  bool started_ = false;
  std::map<std::string, ObjectPtr, std::less<>>::iterator past_it_;
};

Status CacheServer::Impl::Load() {
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
    ResourceType rt;
    rt.group = info.group;
    rt.version = info.version;
    rt.resource = info.resource;
    rt.kind = info.kind;
    rt.singular = info.singular;
    if (rt.singular.empty()) {
      for (char c : info.kind) rt.singular += static_cast<char>(std::tolower(c));
    }
    rt.namespaced = info.namespaced;
    rt.short_names = info.short_names;
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
  auto handler = [this](const http::Request& req, http::ResponseWriter& w) { Handle(req, w); };
  std::optional<http::TlsFiles> tls;
  if (!options_.tls_cert_file.empty()) {
    tls = http::TlsFiles{options_.tls_cert_file, options_.tls_key_file};
  }
  StatusOr<std::unique_ptr<http::Server>> http = http::Server::Start(options_.listen, handler, tls);
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

void CacheServer::Impl::Handle(const http::Request& req, http::ResponseWriter& w) {
  if (!tokens_.empty()) {
    const std::string auth = req.Header("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    bool ok = false;
    if (auth.compare(0, kBearer.size(), kBearer) == 0) {
      std::string_view token = std::string_view(auth).substr(kBearer.size());
      for (const std::string& t : tokens_) ok |= ConstantTimeEquals(token, t);
    }
    if (!ok) return SendReply(w, {401, "Unauthorized", "Unauthorized", ""});
  }
  const std::string& path = req.path;
  const http::Headers json = {{"Content-Type", "application/json"}};
  if (req.method == "GET") {
    if (path == "/api" || path == "/api/") {
      return (void)w.Send(200, json, serve::ApiVersionsJson(address()));
    }
    if (path == "/apis" || path == "/apis/") {
      return (void)w.Send(200, json, serve::ApiGroupListJson(types_));
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
    if (path == "/healthz" || path == "/readyz" || path == "/livez") {
      return (void)w.Send(200, {{"Content-Type", "text/plain; charset=utf-8"}}, "ok");
    }
  }
  Target t;
  switch (serve::ParseTarget(types_, path, &t)) {
    case serve::PathKind::kNotFound:
      return serve::SendNotFoundPage(w);
    case serve::PathKind::kResourceList:
      if (req.method != "GET") return serve::SendNotFoundPage(w);
      return (void)w.Send(
          200, json, serve::ApiResourceListJson(types_, t.group, t.version, /*read_only=*/true));
    case serve::PathKind::kResource:
      break;
  }
  if (req.method != "GET" || (t.legacy_watch && !t.name.empty())) {
    if (req.method == "GET") return serve::SendNotFoundPage(w);
    return SendReply(w, {405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource", ""});
  }
  Output out;
  out.table_version = TableVersion(req.Header("Accept"));
  out.include_object = req.Query("includeObject").value_or("Metadata");
  if (out.include_object.empty()) out.include_object = "Metadata";
  if (out.include_object != "Metadata" && out.include_object != "Object" &&
      out.include_object != "None") {
    return SendReply(w,
                     {400, "BadRequest",
                      "unrecognized includeObject value: " + serve::Quote(out.include_object), ""});
  }
  if (!t.name.empty()) return Get(t, out, w);
  Query q;
  if (std::optional<Reply> bad = serve::ParseQuery(req, t, &q)) return SendReply(w, *bad);
  return q.watch ? Watch(t, q, out, w) : List(t, q, out, w);
}

std::string CacheServer::Impl::ListHead(const Target& t, const Output& out, const std::string& rv,
                                        const std::string& continue_token, bool columns) const {
  ojson meta = ojson::object();
  if (!rv.empty()) meta["resourceVersion"] = rv;
  if (!continue_token.empty()) meta["continue"] = continue_token;
  if (!out.tables()) {
    return R"({"kind":")" + t.rt->list_kind() + R"(","apiVersion":")" + t.rt->api_version() +
           R"(","metadata":)" + meta.dump() + R"(,"items":[)";
  }
  std::string head = R"({"kind":"Table","apiVersion":"meta.k8s.io/)" + out.table_version +
                     R"(","metadata":)" + meta.dump();
  if (columns) {
    const ServedType& st = served_[static_cast<size_t>(t.type)];
    ojson defs = ojson::array();
    if (st.table) {
      for (size_t i = 0; i < st.table->columns().size(); ++i) {
        const TableColumn& c = st.table->columns()[i];
        defs.push_back({{"name", c.name},
                        {"type", "string"},
                        {"format", i == st.table->name_column() ? "name" : ""},
                        {"description", ""},
                        {"priority", c.priority}});
      }
    }
    head += R"(,"columnDefinitions":)" + defs.dump();
  }
  return head + R"(,"rows":[)";
}

std::string CacheServer::Impl::Item(const Target& t, const Output& out, const Object& o,
                                    std::chrono::system_clock::time_point now) const {
  if (!out.tables()) return std::string(o.json());
  const ServedType& st = served_[static_cast<size_t>(t.type)];
  nlohmann::json j = nlohmann::json::parse(o.json(), nullptr, false);
  ojson row = ojson::object();
  ojson cells = ojson::array();
  if (st.table && j.is_object()) {
    StatusOr<std::vector<nlohmann::json>> c = st.table->Cells(j, now);
    if (c.ok()) {
      for (nlohmann::json& cell : *c) cells.push_back(ojson::parse(cell.dump()));
    }
  }
  row["cells"] = std::move(cells);
  if (out.include_object == "Object") {
    row["object"] = ojson::parse(o.json(), nullptr, false);
  } else if (out.include_object == "Metadata") {
    ojson meta = ojson::parse(o.json(), nullptr, false);
    row["object"] = {{"kind", "PartialObjectMetadata"},
                     {"apiVersion", "meta.k8s.io/" + out.table_version},
                     {"metadata", meta.is_object() && meta.contains("metadata") ? meta["metadata"]
                                                                                : ojson::object()}};
  } else {
    row["object"] = nullptr;
  }
  return row.dump();
}

void CacheServer::Impl::Get(const Target& t, const Output& out, http::ResponseWriter& w) {
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
  const http::Headers json = {{"Content-Type", "application/json"}};
  if (!out.tables()) return (void)w.Send(200, json, (*o)->json());
  w.Send(200, json,
         ListHead(t, out, std::string((*o)->resource_version()), "", true) +
             Item(t, out, **o, std::chrono::system_clock::now()) + "]}");
}

std::optional<Reply> CacheServer::Impl::OpenView(const Target& t,
                                                 const std::optional<std::string>& at,
                                                 const std::string& not_older_than,
                                                 const std::string& start, ListView* view) {
  const ServedType& st = served_[static_cast<size_t>(t.type)];
  Cache& cache = source_->cache();
  const std::string& wanted = at ? *at : not_older_than;
  const auto give_up = Clock::now() + kTooLargeWait;
  uint64_t gen = generation();
  for (;;) {
    std::shared_lock<RWMutex> lock(view_mu_);
    StatusOr<KeyspaceStats> stats = cache.Stats(st.keyspace);
    if (!stats.ok()) {
      return Reply{500, "InternalError",
                   "Internal error occurred: " + std::string(stats.status().message()), ""};
    }
    if (stats->relist_in_progress || stats->resource_version.empty()) {
      // As the apiserver answers while its watch cache (re)initializes.
      return Reply{429, "TooManyRequests",
                   "Too many requests, please try again later: storage is (re)initializing", "", 1};
    }
    const std::string current = stats->resource_version;
    const std::optional<uint64_t> cur = ParseCanonicalResourceVersion(current);
    const std::optional<uint64_t> want = ParseCanonicalResourceVersion(wanted);
    if (!wanted.empty() && cur && want && *want > *cur) {
      lock.unlock();
      if (Clock::now() >= give_up) return serve::TooLargeResourceVersion(wanted, current);
      gen = WaitRefresh(gen, give_up);
      continue;
    }
    view->rv = current;
    view->cluster_scoped = !t.rt->namespaced;
    view->prefix = t.namespace_.empty() ? "" : t.namespace_ + "/";
    if (at && *at != current) {
      // Undo the changes after `at`, newest last: the first change of a
      // key after `at` tells its state at `at`.
      if (!cur || !want) return serve::ListTooOld();
      std::string after = *at;
      for (;;) {
        StatusOr<JournalRead> read = cache.ReadJournal(st.keyspace, after, 4096);
        if (!read.ok() && read.status().IsExpired()) return serve::ListTooOld();
        if (!read.ok()) {
          return Reply{500, "InternalError",
                       "Internal error occurred: " + std::string(read.status().message()), ""};
        }
        for (JournalEvent& e : read->events) {
          if (e.key < start || !view->InScope(e.key) || view->past.count(e.key)) continue;
          if (e.type == JournalEvent::Type::kModified && !e.previous) return serve::ListTooOld();
          view->past.emplace(e.key, e.type == JournalEvent::Type::kAdded      ? nullptr
                                    : e.type == JournalEvent::Type::kModified ? e.previous
                                                                              : e.object);
        }
        after = read->resource_version;
        if (!read->more) break;
      }
      view->rv = *at;
    }
    view->now = st.store->NewIteratorFrom(std::max(start, view->prefix));
    return std::nullopt;
  }
}

void CacheServer::Impl::List(const Target& t, const Query& q, const Output& out,
                             http::ResponseWriter& w) {
  serve::ListPlan plan;
  if (std::optional<Reply> bad = serve::PlanList(q, &plan)) return SendReply(w, *bad);
  // The cache's versions are canonical decimals: the plan's, spelled again.
  std::optional<std::string> at;
  std::string not_older_than;
  if (plan.read == serve::ListPlan::Read::kExact) at = std::to_string(plan.rv);
  if (plan.read == serve::ListPlan::Read::kNotOlderThan) not_older_than = std::to_string(plan.rv);
  const std::string& start = plan.start;
  const size_t limit = plan.limit;
  const bool continuing = plan.continuing;
  ListView view;
  if (std::optional<Reply> bad = OpenView(t, at, not_older_than, start, &view)) {
    if (continuing && bad->code == 410) {
      std::optional<uint64_t> now = ParseCanonicalResourceVersion(view.rv);
      return serve::SendContinueExpired(w, serve::EncodeContinue(now.value_or(0), start));
    }
    return SendReply(w, *bad);
  }
  const auto now = std::chrono::system_clock::now();
  std::string key, next;
  ObjectPtr o;
  auto passes = [&](const Object& obj) {
    return q.labels.Matches(obj.labels()) && q.fields.Matches(obj);
  };
  // Reads the next object in scope that passes the selectors; false at the end.
  auto next_match = [&]() -> StatusOr<bool> {
    for (;;) {
      KCACHE_ASSIGN_OR_RETURN(bool more, view.Next(&key, &o));
      if (!more) return false;
      if (view.cluster_scoped && key.find('/') != std::string::npos) continue;
      if (passes(*o)) return true;
    }
  };
  auto internal = [&](const Status& st) {
    return Reply{500, "InternalError", "Internal error occurred: " + std::string(st.message()), ""};
  };
  constexpr size_t kFlushBytes = size_t{1} << 20;
  if (limit == 0) {
    // Unpaginated (informers list this way): streamed as read, in chunks of
    // about 1 MiB, whatever the size of the keyspace.
    StatusOr<bool> more = next_match();
    if (!more.ok()) return SendReply(w, internal(more.status()));
    if (!w.Begin(200, {{"Content-Type", "application/json"}})) return;
    std::string text = ListHead(t, out, view.rv, "", true);
    for (bool first = true; *more; first = false) {
      if (!first) text += ',';
      text += Item(t, out, *o, now);
      if (text.size() >= kFlushBytes) {
        if (!w.Write(text)) return;
        text.clear();
      }
      more = next_match();
      if (!more.ok()) return w.Cut();  // a short body, not a short list
    }
    text += "]}";
    w.Write(text);
    return;
  }
  // A page: its continue token comes before its items, so the page (at
  // most `limit` objects, as the client asked) is read first. One more
  // match is looked for: the token starts at it, and the last page has
  // none, as from the apiserver.
  std::vector<std::string> items;
  for (;;) {
    StatusOr<bool> more = next_match();
    if (!more.ok()) return SendReply(w, internal(more.status()));
    if (!*more) break;
    if (items.size() == limit) {
      next = key;
      break;
    }
    items.push_back(Item(t, out, *o, now));
  }
  std::string token;
  if (!next.empty()) {
    std::optional<uint64_t> rv = ParseCanonicalResourceVersion(view.rv);
    if (!rv) {
      return SendReply(w, internal(Status::Internal("resourceVersion " + serve::Quote(view.rv) +
                                                    " is not a number: cannot page")));
    }
    token = serve::EncodeContinue(*rv, next);
  }
  std::string head = ListHead(t, out, view.rv, token, true);
  std::vector<std::string_view> pieces;
  pieces.reserve(2 * items.size() + 2);
  pieces.push_back(head);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) pieces.push_back(",");
    pieces.push_back(items[i]);
  }
  pieces.push_back("]}");
  if (!w.Begin(200, {{"Content-Type", "application/json"}})) return;
  serve::WriteBody(w, pieces, 2 * serve::kListItemsPerChunk);
}

void CacheServer::Impl::Watch(const Target& t, const Query& q, const Output& out,
                              http::ResponseWriter& w) {
  const ServedType& st = served_[static_cast<size_t>(t.type)];
  std::optional<uint64_t> from_rv;
  if (std::optional<Reply> bad = serve::PlanWatch(q, &from_rv)) return SendReply(w, *bad);
  // The cache's versions are canonical decimals: the plan's, spelled again.
  std::optional<std::string> from;
  if (from_rv) from = std::to_string(*from_rv);
  const auto deadline = Clock::now() + (q.timeout_seconds && *q.timeout_seconds > 0
                                            ? std::chrono::seconds(*q.timeout_seconds)
                                            : options_.default_watch_timeout);
  // The watch starts once the cache has reached `from`; a keyspace being
  // relisted answers 429 before the stream, as the apiserver's
  // initializing watch cache does, other refusals come as an ERROR event.
  ListView view;
  std::optional<Reply> refused = OpenView(t, std::nullopt, from.value_or(""), "", &view);
  if (refused && refused->code != 504) return SendReply(w, *refused);
  if (!w.Begin(200,
               {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}})) {
    return;
  }
  if (refused) {
    w.Write(serve::ErrorEvent(*refused));
    return;
  }
  auto passes = [&](const ObjectPtr& o) {
    return o && (t.namespace_.empty() || o->namespace_() == t.namespace_) &&
           q.labels.Matches(o->labels()) && q.fields.Matches(*o);
  };
  bool columns = true;  // a Table's columns come with the first event only
  auto event = [&](std::string_view type, const Object& o) {
    std::string s = R"({"type":")" + std::string(type) + R"(","object":)";
    if (out.tables()) {
      s += ListHead(t, out, std::string(o.resource_version()), "", columns) +
           Item(t, out, o, std::chrono::system_clock::now()) + "]}";
      columns = false;
    } else {
      s += o.json();
    }
    return s + "}\n";
  };
  std::string pos;
  if (q.send_initial_events.value_or(!from.has_value())) {
    std::string key, text;
    ObjectPtr o;
    for (;;) {
      StatusOr<bool> more = view.Next(&key, &o);
      if (!more.ok()) {
        w.Write(serve::ErrorEvent(
            {500, "InternalError",
             "Internal error occurred: " + std::string(more.status().message()), ""}));
        return;
      }
      if (!*more || text.size() > (size_t{1} << 20)) {
        if (!text.empty() && !w.Write(text)) return;
        text.clear();
      }
      if (!*more) break;
      if (view.cluster_scoped && key.find('/') != std::string::npos) continue;
      if (passes(o)) text += event("ADDED", *o);
    }
    pos = view.rv;
    if (q.send_initial_events.value_or(false) && q.bookmarks) {
      if (!w.Write(serve::Bookmark(*t.rt, ParseCanonicalResourceVersion(pos).value_or(0), true)))
        return;
    }
  } else {
    pos = *from;
    view.now.reset();
  }
  auto next_bookmark = Clock::now() + options_.bookmark_interval;
  uint64_t gen = generation();
  Cache& cache = source_->cache();
  for (;;) {
    StatusOr<JournalRead> read = [&]() -> StatusOr<JournalRead> {
      std::shared_lock<RWMutex> lock(view_mu_);
      StatusOr<JournalRead> r = cache.ReadJournal(st.keyspace, pos, kJournalBatch);
      if (r.ok() || r.status().code() != StatusCode::kExpired) return r;
      StatusOr<KeyspaceStats> stats = cache.Stats(st.keyspace);
      const std::string start = stats.ok() ? stats->journal.start : "";
      return Status::Expired(start);
    }();
    if (!read.ok()) {
      // A watcher that fell behind the journal's window, or from before a
      // relist, must list again: 410, as from the apiserver.
      if (read.status().code() == StatusCode::kExpired) {
        std::string start(read.status().message());
        w.Write(serve::ErrorEvent(serve::TooOldResourceVersion(pos, start.empty() ? "0" : start)));
      } else {
        w.Write(serve::ErrorEvent(
            {500, "InternalError",
             "Internal error occurred: " + std::string(read.status().message()), ""}));
      }
      return;
    }
    std::string text;
    for (const JournalEvent& e : read->events) {
      // As the apiserver filters a watch: a change that enters the
      // selection is an addition, one that leaves it a deletion (of the
      // object as it was, at the change's resourceVersion).
      const bool now_in = passes(e.object);
      const bool was_in = e.type == JournalEvent::Type::kModified && e.previous
                              ? passes(e.previous)
                              : (e.type == JournalEvent::Type::kModified && now_in);
      if (e.type == JournalEvent::Type::kAdded) {
        if (now_in) text += event("ADDED", *e.object);
      } else if (e.type == JournalEvent::Type::kDeleted) {
        if (now_in) text += event("DELETED", *e.object);
      } else if (now_in && was_in) {
        text += event("MODIFIED", *e.object);
      } else if (now_in) {
        text += event("ADDED", *e.object);
      } else if (was_in) {
        std::optional<uint64_t> rv = ParseCanonicalResourceVersion(e.resource_version);
        StatusOr<ObjectPtr> gone =
            Object::Parse(serve::Restamp(e.previous->json(), rv.value_or(0)));
        if (gone.ok()) text += event("DELETED", **gone);
      }
    }
    if (!text.empty() && !w.Write(text)) return;
    pos = read->resource_version;
    if (read->more) continue;
    const auto now = Clock::now();
    if (now >= deadline) return;
    if (q.bookmarks && now >= next_bookmark) {
      if (!w.Write(serve::Bookmark(*t.rt, ParseCanonicalResourceVersion(pos).value_or(0), false)))
        return;
      next_bookmark = now + options_.bookmark_interval;
    }
    if (w.PeerGone()) return;
    auto until =
        std::min({deadline, now + std::chrono::seconds(1), q.bookmarks ? next_bookmark : deadline});
    gen = WaitRefresh(gen, until);
    {
      std::lock_guard<std::mutex> lock(refresh_mu_);
      if (stopping_) return;
    }
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
  if (options.refresh_interval.count() <= 0 || options.bookmark_interval.count() <= 0) {
    return Status::InvalidArgument("refresh and bookmark intervals must be positive");
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, Source::Open(cache_dir, snapshot));
  auto impl = std::make_unique<Impl>(std::move(source), options);
  if (!options.token_file.empty()) {
    KCACHE_ASSIGN_OR_RETURN(impl->tokens_, ReadTokens(options.token_file));
  }
  KCACHE_RETURN_IF_ERROR(impl->Load());
  KCACHE_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<CacheServer>(new CacheServer(std::move(impl)));
}

std::string CacheServer::url() const { return impl_->http_ ? impl_->http_->url() : ""; }

const std::vector<ResourceType>& CacheServer::types() const { return impl_->types_; }

const std::vector<std::string>& CacheServer::skipped() const { return impl_->skipped_; }

void CacheServer::Stop() {
  if (impl_) impl_->Stop();
}

Status RunServeCache(const std::string& cache_dir, const std::string& snapshot,
                     const CacheServeOptions& options, std::ostream& out) {
  serve::StopSignals signals;
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<CacheServer> server,
                          CacheServer::Start(cache_dir, snapshot, options));
  out << "kcache serve: " << (snapshot.empty() ? "cache " + cache_dir : "snapshot " + snapshot)
      << ", " << server->types().size() << " resources, read-only"
      << (options.tls_cert_file.empty() ? "" : ", TLS")
      << (options.token_file.empty() ? "" : ", bearer tokens required") << "\n";
  for (const std::string& s : server->skipped()) out << "  not served: " << s << "\n";
  out << serve::ServingLine(server->url());
  out.flush();
  const char* sig = signals.Wait();
  out << "kcache serve: " << sig << ", stopping\n";
  out.flush();
  server->Stop();
  return Status::OK();
}

}  // namespace kcache::tool
