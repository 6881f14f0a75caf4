// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/api.h"

#include <algorithm>
#include <ctime>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "tools/kcache/apiserver/api_query.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/api_serve.h"
#include "tools/kcache/apiserver/resource_types.h"
#include "tools/kcache/apiserver/tables.h"
#include "tools/kcache/testcluster/protobuf_body.h"
#include "tools/kcache/testcluster/strategic_merge.h"
#include "util/base64.h"
#include "util/scope_guard.h"

namespace kcache::serve {
namespace {

using ojson = nlohmann::ordered_json;

std::string Now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

uint64_t Random() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

std::string NewUid() {
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t a = Random(), b = Random();
  std::string s;
  for (int i = 0; i < 32; ++i) {
    uint64_t v = i < 16 ? a >> (4 * i) : b >> (4 * (i - 16));
    char c = kHex[v & 15];
    if (i == 12) c = '4';
    if (i == 16) c = kHex[8 + (v & 3)];
    if (i == 8 || i == 12 || i == 16 || i == 20) s += '-';
    s += c;
  }
  return s;
}

std::string RandomSuffix(int n) {
  static constexpr char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  uint64_t v = Random();
  for (int i = 0; i < n; ++i, v /= 27) s += kChars[v % 27];
  return s;
}

// metadata keys in the order the apiserver writes them; others follow.
ojson CanonicalMeta(const ojson& meta) {
  static constexpr std::string_view kOrder[] = {"name",
                                                "generateName",
                                                "namespace",
                                                "selfLink",
                                                "uid",
                                                "resourceVersion",
                                                "generation",
                                                "creationTimestamp",
                                                "deletionTimestamp",
                                                "deletionGracePeriodSeconds",
                                                "labels",
                                                "annotations",
                                                "ownerReferences",
                                                "finalizers",
                                                "managedFields"};
  ojson out = ojson::object();
  for (std::string_view k : kOrder) {
    if (auto it = meta.find(std::string(k)); it != meta.end()) out[std::string(k)] = *it;
  }
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();
  }
  return out;
}

// kind, apiVersion, metadata first, as in the apiserver's output.
ojson Canonical(const ojson& obj) {
  ojson out = ojson::object();
  for (const char* k : {"kind", "apiVersion"}) {
    if (obj.contains(k)) out[k] = obj[k];
  }
  out["metadata"] = CanonicalMeta(obj.value("metadata", ojson::object()));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();
  }
  return out;
}

}  // namespace

Api::Api(ClusterState* state, ApiOptions options)
    : state_(state), source_(state), options_(std::move(options)) {
  // kube-apiserver's printers for the built-in types; a custom resource
  // without printer columns gets Name and Age.
  for (const ResourceType& rt : state_->types()) {
    ResourceInfo info(rt);
    info.custom = !BuiltInGroup(rt.group);
    StatusOr<tool::TableSpec> spec = tool::TableSpec::For(info);
    tables_.push_back(spec.ok() ? std::optional<tool::TableSpec>(*std::move(spec)) : std::nullopt);
  }
}

const tool::TableSpec* Api::TableOf(int type) const {
  const std::optional<tool::TableSpec>& t = tables_[static_cast<size_t>(type)];
  return t ? &*t : nullptr;
}

// The OpenAPI v3 documents kubectl reads: the root lists a document per
// group-version, and each document has the PATCH operation of every type,
// with the query parameters the server honours. kubectl looks there for
// fieldValidation, and with it leaves validation to the server instead of
// downloading schemas. The documents hold no schemas: the synthetic
// cluster has none (docs/serve.md).
std::string Api::OpenApiRoot() const {
  ojson paths = ojson::object();
  for (const ResourceType& rt : state_->types()) {
    const std::string gv = rt.group_version_path().substr(1);
    paths[gv] = {{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=kcache"}};
  }
  return ojson{{"paths", paths}}.dump();
}

std::optional<std::string> Api::OpenApiDocument(const std::string& group_version) const {
  ojson paths = ojson::object();
  for (const ResourceType& rt : state_->types()) {
    if (rt.group_version_path().substr(1) != group_version) continue;
    ojson params = ojson::array();
    for (const char* name : {"dryRun", "fieldManager", "fieldValidation", "force"}) {
      params.push_back({{"name", name},
                        {"in", "query"},
                        {"schema", {{"type", name == std::string("force") ? "boolean" : "string"}}},
                        {"uniqueItems", true}});
    }
    ojson patch = {{"operationId", "patch" + rt.kind},
                   {"parameters", params},
                   {"responses", {{"200", {{"description", "OK"}}}}},
                   {"x-kubernetes-action", "patch"},
                   {"x-kubernetes-group-version-kind",
                    {{"group", rt.group}, {"version", rt.version}, {"kind", rt.kind}}}};
    const std::string item = rt.group_version_path() +
                             (rt.namespaced ? "/namespaces/{namespace}/" : "/") + rt.resource +
                             "/{name}";
    paths[item] = {{"patch", patch}};
  }
  if (paths.empty()) return std::nullopt;
  return ojson{{"openapi", "3.0.0"},
               {"info", {{"title", "Kubernetes"}, {"version", "v1.20.2-kcache"}}},
               {"paths", paths},
               {"components", {{"schemas", ojson::object()}}}}
      .dump();
}

void Api::NoteFault(const char* kind) {
  std::lock_guard<std::mutex> lock(mu_);
  ++faults_injected_[kind];
}

void Api::Count(const std::string& verb, const std::string& resource) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[{verb, resource}];
}

std::string Api::Metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out =
      "# HELP kcache_serve_requests_total Requests to resources by verb.\n"
      "# TYPE kcache_serve_requests_total counter\n";
  for (const auto& [key, n] : counts_) {
    out += "kcache_serve_requests_total{verb=\"" + key.first + "\",resource=\"" + key.second +
           "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP kcache_serve_list_items_total Objects returned by LIST requests.\n"
      "# TYPE kcache_serve_list_items_total counter\n";
  for (const auto& [resource, n] : list_items_) {
    out +=
        "kcache_serve_list_items_total{resource=\"" + resource + "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP kcache_serve_watch_lists_total Watches that began with every object "
      "(sendInitialEvents=true): a LIST in a watch's form.\n"
      "# TYPE kcache_serve_watch_lists_total counter\n";
  for (const auto& [resource, n] : watch_lists_) {
    out +=
        "kcache_serve_watch_lists_total{resource=\"" + resource + "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP kcache_serve_faults_total Faults injected by kind.\n# TYPE kcache_serve_faults_total "
      "counter\n";
  for (const auto& [kind, n] : faults_injected_) {
    out += "kcache_serve_faults_total{fault=\"" + kind + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP kcache_serve_watches Watches being served.\n# TYPE kcache_serve_watches gauge\n";
  out += "kcache_serve_watches " + std::to_string(watches_open_.load()) + "\n";
  out +=
      "# HELP kcache_serve_resource_version The current resourceVersion.\n"
      "# TYPE kcache_serve_resource_version gauge\n";
  out += "kcache_serve_resource_version " + std::to_string(state_->current_rv()) + "\n";
  return out;
}

void Api::Handle(const serve::http::Request& req, serve::http::ResponseWriter& w) {
  const std::string& path = req.path;
  const serve::http::Headers json = {{"Content-Type", "application/json"}};
  if (req.method == "GET") {
    if (path == "/api" || path == "/api/")
      return (void)w.Send(200, json, ApiVersionsJson(address_));
    if (path == "/apis" || path == "/apis/")
      return (void)w.Send(200, json, ApiGroupListJson(state_->types()));
    if (path == "/version") {
      return (void)w.Send(
          200, json,
          R"({"major":"1","minor":"20","gitVersion":"v1.20.2-kcache","platform":"linux/amd64"})");
    }
    if (path == "/healthz" || path == "/readyz" || path == "/livez") {
      return (void)w.Send(200, {{"Content-Type", "text/plain; charset=utf-8"}}, "ok");
    }
    if (path == "/metrics") {
      return (void)w.Send(200, {{"Content-Type", "text/plain; version=0.0.4"}}, Metrics());
    }
    if (path == "/openapi/v3" || path == "/openapi/v3/")
      return (void)w.Send(200, json, OpenApiRoot());
    if (path.rfind("/openapi/v3/", 0) == 0) {
      std::optional<std::string> doc = OpenApiDocument(path.substr(12));
      if (!doc) return SendNotFoundPage(w);
      return (void)w.Send(200, json, *doc);
    }
  }
  Target t;
  switch (ParseTarget(state_->types(), path, &t)) {
    case PathKind::kNotFound:
      return SendNotFoundPage(w);
    case PathKind::kResourceList:
      if (req.method != "GET") return SendNotFoundPage(w);
      return (void)w.Send(200, json, ApiResourceListJson(state_->types(), t.group, t.version));
    case PathKind::kResource:
      break;
  }
  HandleResource(req, t, w);
}

void Api::HandleResource(const serve::http::Request& req, const Target& t,
                         serve::http::ResponseWriter& w) {
  const uint64_t n = ++requests_;
  const bool watch =
      req.method == "GET" && (t.legacy_watch || ParseBool(req.Query("watch").value_or("false")));
  if (InjectRequestFault(n, watch, w)) return;
  const std::string& m = req.method;
  Output out;
  if (std::optional<Reply> bad = ParseOutput(req, &out)) return SendReply(w, *bad);
  const bool drop = out.drop_managed_fields;
  if (m != "GET" && req.Query("dryRun").has_value()) {
    return SendReply(w, {400, "BadRequest",
                         "dryRun is not supported by kcache serve's synthetic cluster: the request "
                         "would have been carried out",
                         ""});
  }
  if (!t.name.empty()) {
    if (t.legacy_watch) return SendNotFoundPage(w);
    if (m == "GET") return Count("get", t.rt->resource), Get(t, out, w);
    if (m == "PUT") return Count("update", t.rt->resource), Update(req, t, w);
    if (m == "PATCH") return Count("patch", t.rt->resource), Patch(req, t, w);
    if (m == "DELETE" && t.subresource.empty()) {
      return Count("delete", t.rt->resource), Delete(req, t, w);
    }
  } else if (m == "POST" && !t.legacy_watch && (!t.rt->namespaced || !t.namespace_.empty())) {
    return Count("create", t.rt->resource), Create(req, t, w);
  } else if (m == "GET") {
    Query q;
    if (std::optional<Reply> bad = ParseQuery(req, t, &q)) return SendReply(w, *bad);
    Count(q.watch ? "watch" : "list", t.rt->resource);
    TableRows rows(TableOf(t.type), out);
    const TableWriter* tables = out.tables() ? &rows : nullptr;
    return q.watch ? Watch(t, q, n, drop, tables, w) : List(t, q, n, drop, tables, w);
  }
  SendReply(w, {405, "MethodNotAllowed",
                "the server does not allow this method on the requested resource", ""});
}

bool Api::InjectRequestFault(uint64_t n, bool watch, serve::http::ResponseWriter& w) {
  const Faults& f = options_.faults;
  if (f.slow_bytes_per_second > 0) w.SetRateLimit(f.slow_bytes_per_second);
  if (f.throttle.Contains(n)) {
    NoteFault("throttle");
    SendReply(w, {429, "TooManyRequests", "Too many requests, please try again later.", "",
                  f.retry_after_seconds});
    return true;
  }
  if (f.internal_error.Contains(n) && !watch) {  // a watch's comes in its stream
    NoteFault("internal-error");
    SendReply(w, {500, "InternalError",
                  "Internal error occurred: injected fault on request " + std::to_string(n), ""});
    return true;
  }
  return false;
}

namespace {

// The fault of request `n` on a body, from the first that names it.
BodyFault BodyFaultOf(const Faults& f, uint64_t n, bool watch) {
  if (watch && f.stall.Contains(n)) return BodyFault::kStall;
  if (f.cut.Contains(n)) return BodyFault::kCut;
  if (f.malformed.Contains(n)) return BodyFault::kMalformed;
  if (f.stall.Contains(n)) return BodyFault::kStall;
  return BodyFault::kNone;
}

}  // namespace

void Api::List(const Target& t, const Query& q, uint64_t n, bool drop_managed_fields,
               const TableWriter* tables, serve::http::ResponseWriter& w) {
  if (options_.faults.expire.Contains(n)) {
    NoteFault("expire");
    return SendReply(w, ListTooOld());
  }
  ListCall call;
  call.tables = tables;
  call.drop_managed_fields = drop_managed_fields;
  call.fault = BodyFaultOf(options_.faults, n, /*watch=*/false);
  call.injected = [this](const char* kind) { NoteFault(kind); };
  const size_t sent = ServeList(source_, t, q, call, w);
  std::lock_guard<std::mutex> lock(mu_);
  list_items_[t.rt->resource] += sent;
}

void Api::Watch(const Target& t, const Query& q, uint64_t n, bool drop_managed_fields,
                const TableWriter* tables, serve::http::ResponseWriter& w) {
  if (q.send_initial_events.value_or(false)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++watch_lists_[t.rt->resource];
  }
  const Faults& f = options_.faults;
  WatchCall call;
  call.tables = tables;
  call.drop_managed_fields = drop_managed_fields;
  call.bookmark_interval = options_.bookmark_interval;
  call.default_timeout = options_.default_watch_timeout;
  if (f.expire.Contains(n)) {
    NoteFault("expire");
    call.error = TooOldResourceVersion(q.rv.value_or("0"), std::to_string(state_->floor(t.type)));
  } else if (f.internal_error.Contains(n)) {
    NoteFault("internal-error");
    call.error =
        Reply{500, "InternalError",
              "Internal error occurred: injected fault on request " + std::to_string(n), ""};
  }
  call.fault = BodyFaultOf(f, n, /*watch=*/true);
  call.injected = [this](const char* kind) { NoteFault(kind); };
  ++watches_open_;
  util::ScopeGuard closing([this] { --watches_open_; });
  ServeWatch(source_, t, q, call, w);
}

void Api::Get(const Target& t, const Output& out, serve::http::ResponseWriter& w) {
  StoredPtr o = state_->Get(t.type, StateKey(*t.rt, t.namespace_, t.name));
  if (!o) return SendReply(w, NotFound(*t.rt, t.name));
  SendObject(w, o->object, TableOf(t.type), out);
}

namespace {

Reply Internal(const Status& st) {
  return Reply{500, "InternalError", "Internal error occurred: " + std::string(st.message()), ""};
}

// The answer to a write: the reply its check made, or the server's error,
// or the stored object with `code`.
void SendWritten(serve::http::ResponseWriter& w, const std::optional<Reply>& reply,
                 const StatusOr<StoredPtr>& stored, int code) {
  if (reply) return SendReply(w, *reply);
  if (!stored.ok()) return SendReply(w, Internal(stored.status()));
  w.Send(code, {{"Content-Type", "application/json"}}, (*stored)->object->json());
}

Reply Conflict(const ResourceType& rt, const std::string& name, const std::string& why) {
  return Reply{409, "Conflict",
               "Operation cannot be fulfilled on " + rt.resource +
                   (rt.group.empty() ? "" : "." + rt.group) + " " + Quote(name) + ": " + why,
               Details(name, rt.group, rt.resource)};
}

// `object` with the status of `written`: a write to the status
// subresource changes nothing else.
ojson WithStatusOf(const ojson& object, const ojson& written) {
  ojson out = object;
  if (written.contains("status")) {
    out["status"] = written["status"];
  } else {
    out.erase("status");
  }
  return out;
}

const char kModified[] =
    "the object has been modified; please apply your changes to the latest version and try again";

// Parses a create or update body and checks what the URL fixes: kind,
// apiVersion, namespace (and name, for an update).
std::optional<Reply> ParseBody(const serve::http::Request& req, const ResourceType& rt,
                               const std::string& namespace_, ojson* out) {
  const std::string type = req.Header("Content-Type");
  ojson j;
  if (type.starts_with(kProtobufMediaType) && BuiltInGroup(rt.group)) {
    // kubectl's typed clients send built-in kinds as protobuf.
    StatusOr<ojson> decoded = ProtobufToJson(req.body);
    if (!decoded.ok()) {
      const bool kind = decoded.status().code() == StatusCode::kUnimplemented;
      return Reply{kind ? 415 : 400, kind ? "UnsupportedMediaType" : "BadRequest",
                   std::string(decoded.status().message()), ""};
    }
    j = *std::move(decoded);
  } else if (!type.empty() && type.find("json") == std::string::npos) {
    return Reply{
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json" +
            std::string(BuiltInGroup(rt.group) ? ", " + std::string(kProtobufMediaType) : ""),
        ""};
  } else {
    j = ojson::parse(req.body, nullptr, false);
  }
  if (!j.is_object()) {
    return Reply{400, "BadRequest",
                 "the body of the request was in an unknown format - accepted media types include: "
                 "application/json",
                 ""};
  }
  if (j.contains("apiVersion") && j["apiVersion"] != rt.api_version()) {
    return Reply{400, "BadRequest",
                 "the API version in the data (" + j["apiVersion"].dump() +
                     ") does not match the expected API version (" + rt.api_version() + ")",
                 ""};
  }
  if (j.contains("kind") && j["kind"] != rt.kind) {
    return Reply{400, "BadRequest",
                 "the kind in the data (" + j["kind"].dump() +
                     ") does not match the expected kind (" + rt.kind + ")",
                 ""};
  }
  j["kind"] = rt.kind;
  j["apiVersion"] = rt.api_version();
  if (!j.contains("metadata") || !j["metadata"].is_object()) j["metadata"] = ojson::object();
  ojson& meta = j["metadata"];
  if (rt.namespaced) {
    if (meta.contains("namespace") && meta["namespace"] != namespace_ && meta["namespace"] != "") {
      return Reply{
          400, "BadRequest",
          "the namespace of the provided object does not match the namespace sent on the request",
          ""};
    }
    meta["namespace"] = namespace_;
  } else {
    meta.erase("namespace");
  }
  for (const char* k : {"name", "generateName", "resourceVersion", "uid"}) {
    if (meta.contains(k) && !meta[k].is_string()) {
      return Reply{400, "BadRequest", std::string("metadata.") + k + " must be a string", ""};
    }
  }
  if (rt.group.empty() && rt.kind == "Secret") {
    // As the apiserver stores a Secret: stringData merged into data (base64),
    // and type Opaque by default.
    if (j.contains("stringData") && j["stringData"].is_object()) {
      if (!j.contains("data") || !j["data"].is_object()) j["data"] = ojson::object();
      for (auto& [key, value] : j["stringData"].items()) {
        if (!value.is_string()) {
          return Reply{400, "BadRequest", "stringData." + key + " must be a string", ""};
        }
        j["data"][key] = Base64Encode(value.get<std::string>());
      }
    }
    j.erase("stringData");
    if (j.value("type", "").empty()) j["type"] = "Opaque";
  }
  *out = std::move(j);
  return std::nullopt;
}

// Defaults the apiserver applies to every namespace.
void DefaultNamespace(ojson& j) {
  if (!j.contains("spec")) j["spec"] = {{"finalizers", {"kubernetes"}}};
  if (!j.contains("status")) j["status"] = {{"phase", "Active"}};
}

}  // namespace

void Api::Create(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w) {
  ojson j;
  if (auto err = ParseBody(req, *t.rt, t.namespace_, &j)) return SendReply(w, *err);
  ojson& meta = j["metadata"];
  std::string name = meta.value("name", "");
  if (name.empty() && !meta.value("generateName", "").empty())
    name = meta["generateName"].get<std::string>() + RandomSuffix(5);
  if (name.empty()) {
    return SendReply(
        w, {422, "Invalid",
            t.rt->kind +
                " \"\" is invalid: metadata.name: Required value: name or generateName is required",
            Details("", t.rt->group, t.rt->kind)});
  }
  if (t.rt->namespaced) {
    int ns_type = state_->Find("", "namespaces");
    if (ns_type >= 0 && !state_->Get(ns_type, t.namespace_)) {
      return SendReply(w, {404, "NotFound", "namespaces " + Quote(t.namespace_) + " not found",
                           Details(t.namespace_, "", "namespaces")});
    }
  }
  meta["name"] = name;
  meta["uid"] = NewUid();
  meta["creationTimestamp"] = Now();
  meta.erase("resourceVersion");
  if (t.rt->kind == "Namespace") DefaultNamespace(j);
  j = Canonical(j);
  std::optional<Reply> reply;
  StatusOr<StoredPtr> stored = state_->Apply(
      t.type, StateKey(*t.rt, t.namespace_, name),
      [&](const StoredPtr& current, uint64_t rv) -> StatusOr<Change> {
        if (current) {
          reply = Reply{409, "AlreadyExists",
                        t.rt->resource + (t.rt->group.empty() ? "" : "." + t.rt->group) + " " +
                            Quote(name) + " already exists",
                        Details(name, t.rt->group, t.rt->resource)};
          return Status::AlreadyExists(name);
        }
        j["metadata"]["resourceVersion"] = std::to_string(rv);
        j = Canonical(j);
        return Change{Change::kWrite, j.dump()};
      });
  SendWritten(w, reply, stored, 201);
}

void Api::Update(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w) {
  ojson j;
  if (auto err = ParseBody(req, *t.rt, t.namespace_, &j)) return SendReply(w, *err);
  std::string name = j["metadata"].value("name", "");
  if (name != t.name) {
    return SendReply(w, {400, "BadRequest",
                         "the name of the object (" + name +
                             ") does not match the name on the URL (" + t.name + ")",
                         ""});
  }
  const std::string sent_rv = j["metadata"].value("resourceVersion", "");
  std::optional<Reply> reply;
  StatusOr<StoredPtr> stored = state_->Apply(
      t.type, StateKey(*t.rt, t.namespace_, name),
      [&](const StoredPtr& current, uint64_t rv) -> StatusOr<Change> {
        if (!current) {
          reply = NotFound(*t.rt, name);
          return Status::NotFound(name);
        }
        if (!sent_rv.empty() && sent_rv != std::to_string(current->rv)) {
          reply = Conflict(*t.rt, name, kModified);
          return Status::FailedPrecondition(name);
        }
        ojson before = ojson::parse(current->object->json(), nullptr, false);
        if (!t.subresource.empty()) j = WithStatusOf(before, j);
        ojson& meta = j["metadata"];
        for (const char* k : {"uid", "creationTimestamp"}) {
          if (before["metadata"].contains(k)) meta[k] = before["metadata"][k];
        }
        if (t.rt->kind == "Namespace") DefaultNamespace(j);
        meta["resourceVersion"] = std::to_string(current->rv);
        if (nlohmann::json::parse(j.dump()) == nlohmann::json::parse(current->object->json())) {
          return Change{};  // no change: no new resourceVersion, no event
        }
        meta["resourceVersion"] = std::to_string(rv);
        return Change{Change::kWrite, Canonical(j).dump()};
      });
  SendWritten(w, reply, stored, 200);
}

void Api::Delete(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w) {
  std::string want_uid, want_rv;
  if (!req.body.empty()) {
    ojson opts = ojson::parse(req.body, nullptr, false);
    if (!opts.is_object()) {
      return SendReply(
          w, {400, "BadRequest", "the body of the request is not DeleteOptions JSON", ""});
    }
    if (opts.contains("preconditions") && opts["preconditions"].is_object()) {
      want_uid = opts["preconditions"].value("uid", "");
      want_rv = opts["preconditions"].value("resourceVersion", "");
    }
  }
  std::optional<Reply> reply;
  std::string uid;
  StatusOr<StoredPtr> stored = state_->Apply(
      t.type, StateKey(*t.rt, t.namespace_, t.name),
      [&](const StoredPtr& current, uint64_t rv) -> StatusOr<Change> {
        if (!current) {
          reply = NotFound(*t.rt, t.name);
          return Status::NotFound(t.name);
        }
        uid = current->object->meta().uid;
        std::string conflict;
        if (!want_uid.empty() && want_uid != uid) {
          conflict = "Precondition failed: UID in precondition: " + want_uid +
                     ", UID in object meta: " + uid;
        } else if (!want_rv.empty() && want_rv != std::to_string(current->rv)) {
          conflict = "Precondition failed: ResourceVersion in precondition: " + want_rv +
                     ", ResourceVersion in object meta: " + std::to_string(current->rv);
        }
        if (!conflict.empty()) {
          reply = Conflict(*t.rt, t.name, conflict);
          return Status::FailedPrecondition(t.name);
        }
        return Change{Change::kDelete, Restamp(current->object->json(), rv)};
      });
  if (reply) return SendReply(w, *reply);
  if (!stored.ok()) return SendReply(w, Internal(stored.status()));
  w.Send(200, {{"Content-Type", "application/json"}},
         StatusJson(200, "", "", Details(t.name, t.rt->group, t.rt->resource, uid)));
}

// Merge patches (RFC 7386), JSON patches (RFC 6902) and strategic merge
// patches, of the object or of its status, and server-side apply. As
// kube-apiserver, custom resources take no strategic merge patch.
// Server-side apply creates a missing object and merges the applied
// configuration as a strategic merge patch would; it keeps no field
// ownership (no managedFields, no conflicts, and fields a manager stops
// applying stay): docs/serve.md.
void Api::Patch(const serve::http::Request& req, const Target& t, serve::http::ResponseWriter& w) {
  const std::string type = req.Header("Content-Type");
  const bool builtin = BuiltInGroup(t.rt->group);
  const bool merge = type.starts_with("application/merge-patch+json");
  const bool json_patch = type.starts_with("application/json-patch+json");
  const bool strategic = builtin && type.starts_with("application/strategic-merge-patch+json");
  const bool apply = type.starts_with("application/apply-patch+yaml");
  if (!merge && !json_patch && !strategic && !apply) {
    return SendReply(w,
                     {415, "UnsupportedMediaType",
                      "the body of the request was in an unknown format - accepted media types "
                      "include: application/json-patch+json, application/merge-patch+json, " +
                          std::string(builtin ? "application/strategic-merge-patch+json, " : "") +
                          "application/apply-patch+yaml",
                      ""});
  }
  ojson patch = ojson::parse(req.body, nullptr, false);
  if (patch.is_discarded() || (!json_patch && !patch.is_object()) ||
      (json_patch && !patch.is_array())) {
    return SendReply(w, {400, "BadRequest",
                         apply ? "the synthetic cluster of kcache serve reads an apply patch "
                                 "written as a JSON object (YAML's JSON form)"
                               : std::string("the body of the request is not a ") +
                                     (json_patch ? "JSON patch (an array)" : "JSON object"),
                         ""});
  }
  if (apply && req.Query("fieldManager").value_or("").empty()) {
    return SendReply(w, {422, "Invalid",
                         "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                         "is required for apply patch",
                         Details("", "meta.k8s.io", "PatchOptions")});
  }
  std::optional<Reply> reply;
  int code = 200;
  StatusOr<StoredPtr> stored = state_->Apply(
      t.type, StateKey(*t.rt, t.namespace_, t.name),
      [&](const StoredPtr& current, uint64_t rv) -> StatusOr<Change> {
        if (!current && !(apply && t.subresource.empty())) {
          reply = NotFound(*t.rt, t.name);
          return Status::NotFound(t.name);
        }
        const std::string current_rv = current ? std::to_string(current->rv) : "";
        ojson before =
            current ? ojson::parse(current->object->json(), nullptr, false)
                    : ojson{{"metadata",
                             {{"name", t.name}, {"uid", NewUid()}, {"creationTimestamp", Now()}}}};
        if (!current && t.rt->namespaced) before["metadata"]["namespace"] = t.namespace_;
        ojson after = before;
        if (merge) {
          after.merge_patch(patch);
        } else if (json_patch) {
          try {
            after = before.patch(patch);
          } catch (const nlohmann::json::exception& e) {
            reply = Reply{422, "Invalid", std::string("the JSON patch failed: ") + e.what(), ""};
            return Status::InvalidArgument(e.what());
          }
        } else {
          if (apply &&
              ((patch.contains("kind") && patch["kind"] != t.rt->kind) ||
               (patch.contains("apiVersion") && patch["apiVersion"] != t.rt->api_version()))) {
            reply =
                Reply{400, "BadRequest",
                      "the kind and apiVersion of the applied object (" + patch.value("kind", "") +
                          ", " + patch.value("apiVersion", "") + ") are not the ones of the URL (" +
                          t.rt->kind + ", " + t.rt->api_version() + ")",
                      ""};
            return Status::InvalidArgument("kind");
          }
          StatusOr<ojson> merged = StrategicMerge(before, patch);
          if (!merged.ok()) {
            reply = Reply{422, "Invalid", std::string(merged.status().message()), ""};
            return merged.status();
          }
          after = *std::move(merged);
        }
        if (!after.is_object() || !after.contains("metadata") || !after["metadata"].is_object()) {
          reply = Reply{422, "Invalid", "the patched object has no metadata", ""};
          return Status::InvalidArgument("no metadata");
        }
        ojson& meta = after["metadata"];
        // A resourceVersion in the patch is a precondition.
        if (current && meta.value("resourceVersion", current_rv) != current_rv) {
          reply = Conflict(*t.rt, t.name, kModified);
          return Status::FailedPrecondition(t.name);
        }
        if (!t.subresource.empty()) after = WithStatusOf(before, after);
        // What the URL and the server own cannot be patched away.
        for (const char* k : {"name", "namespace", "uid", "creationTimestamp"}) {
          if (before["metadata"].contains(k)) {
            after["metadata"][k] = before["metadata"][k];
          } else {
            after["metadata"].erase(k);
          }
        }
        after["kind"] = t.rt->kind;
        after["apiVersion"] = t.rt->api_version();
        if (!current) {
          if (t.rt->kind == "Namespace") DefaultNamespace(after);
          code = 201;
        } else {
          after["metadata"]["resourceVersion"] = current_rv;
          if (nlohmann::json::parse(after.dump()) ==
              nlohmann::json::parse(current->object->json())) {
            return Change{};  // no change: no new resourceVersion, no event
          }
        }
        after["metadata"]["resourceVersion"] = std::to_string(rv);
        return Change{Change::kWrite, Canonical(after).dump()};
      });
  SendWritten(w, reply, stored, code);
}

}  // namespace kcache::serve
