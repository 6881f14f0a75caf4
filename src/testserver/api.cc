#include "testserver/api.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <deque>
#include <optional>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "kcache/field_selector.h"
#include "kcache/label_selector.h"
#include "util/base64.h"

namespace kcache::serve {
namespace {

using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kNotFoundPage = "404 page not found\n";
constexpr std::string_view kAddedPrefix = R"({"type":"ADDED","object":)";
constexpr std::string_view kModifiedPrefix = R"({"type":"MODIFIED","object":)";
constexpr std::string_view kDeletedPrefix = R"({"type":"DELETED","object":)";
constexpr std::string_view kEventSuffix = "}\n";
constexpr size_t kWatchBatch = 512;
constexpr size_t kListItemsPerChunk = 400;

// An error answer: HTTP code, Status reason and message, Status details.
struct Reply {
  int code = 0;
  std::string reason;
  std::string message;
  std::string details;  // JSON object or ""
  int64_t retry_after = 0;
};

std::string Quote(std::string_view s) { return ojson(std::string(s)).dump(); }

std::string Details(const std::string& name, const std::string& group, const std::string& kind,
                    const std::string& uid = "") {
  ojson d = ojson::object();
  if (!name.empty()) d["name"] = name;
  if (!group.empty()) d["group"] = group;
  d["kind"] = kind;
  if (!uid.empty()) d["uid"] = uid;
  return d.dump();
}

void SendReply(http::ResponseWriter& w, const Reply& r) {
  http::Headers headers = {{"Content-Type", "application/json"},
                           {"Cache-Control", "no-cache, private"}};
  std::string details = r.details;
  if (r.retry_after > 0) {
    headers.emplace_back("Retry-After", std::to_string(r.retry_after));
    ojson d = details.empty() ? ojson::object() : ojson::parse(details);
    d["retryAfterSeconds"] = r.retry_after;
    details = d.dump();
  }
  w.Send(r.code, headers, StatusJson(r.code, r.reason, r.message, details));
}

void SendNotFoundPage(http::ResponseWriter& w) {
  w.Send(404,
         {{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}},
         kNotFoundPage);
}

Reply NotFound(const ResourceType& t, const std::string& name) {
  return {404, "NotFound",
          t.resource + (t.group.empty() ? "" : "." + t.group) + " " + Quote(name) + " not found",
          Details(name, t.group, t.resource)};
}

Reply Invalid(std::string_view kind, std::string_view group, std::string_view field,
              std::string_view cause_reason, std::string_view detail) {
  std::string message = std::string(kind) + "." + std::string(group) +
                        " \"\" is invalid: " + std::string(field) + ": " + std::string(detail);
  ojson d = {{"group", group},
             {"kind", kind},
             {"causes", {{{"reason", cause_reason}, {"message", detail}, {"field", field}}}}};
  return {422, "Invalid", message, d.dump()};
}

Reply ListOptionsInvalid(std::string_view field, std::string_view detail) {
  return Invalid("ListOptions", "meta.k8s.io", field, "FieldValueForbidden",
                 "Forbidden: " + std::string(detail));
}

bool ParseBool(std::string_view v) {
  if (v == "0") return false;
  std::string lower(v);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower != "false";
}

std::optional<uint64_t> ParseRv(std::string_view s) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return n;
}

// Continue tokens carry the list's resourceVersion and the next key, as
// the apiserver's: URL-safe unpadded base64 of {"v":..,"rv":..,"start":..}.
std::string EncodeContinue(uint64_t rv, const std::string& start) {
  std::string b = Base64Encode(ojson{{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", start}}.dump());
  while (!b.empty() && b.back() == '=') b.pop_back();
  std::replace(b.begin(), b.end(), '+', '-');
  std::replace(b.begin(), b.end(), '/', '_');
  return b;
}

std::optional<std::pair<uint64_t, std::string>> DecodeContinue(std::string token) {
  std::replace(token.begin(), token.end(), '-', '+');
  std::replace(token.begin(), token.end(), '_', '/');
  while (token.size() % 4 != 0) token += '=';
  std::optional<std::string> raw = Base64Decode(token);
  if (!raw) return std::nullopt;
  ojson j = ojson::parse(*raw, nullptr, false);
  if (!j.is_object() || j.value("v", "") != "meta.k8s.io/v1" || !j.contains("rv") ||
      !j["rv"].is_number_unsigned() || !j.contains("start") || !j["start"].is_string()) {
    return std::nullopt;
  }
  return std::make_pair(j["rv"].get<uint64_t>(), j["start"].get<std::string>());
}

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

std::string Restamp(std::string_view json, uint64_t rv) {
  ojson j = ojson::parse(json, nullptr, false);
  j["metadata"]["resourceVersion"] = std::to_string(rv);
  return j.dump();
}

std::string Bookmark(const ResourceType& t, uint64_t rv, bool initial_events_end) {
  std::string s = R"({"type":"BOOKMARK","object":{"kind":")" + t.kind + R"(","apiVersion":")" +
                  t.api_version() + R"(","metadata":{"resourceVersion":")" + std::to_string(rv) +
                  "\"";
  if (initial_events_end) s += R"(,"annotations":{"k8s.io/initial-events-end":"true"})";
  return s + "}}}\n";
}

std::string ErrorEvent(const Reply& r) {
  return R"({"type":"ERROR","object":)" + StatusJson(r.code, r.reason, r.message, r.details) +
         "}\n";
}

// Sends `pieces` as chunks of up to `per_chunk` pieces; with `stop_after`,
// sends only that many bytes and returns (the caller cuts or stalls).
bool WriteBody(http::ResponseWriter& w, const std::vector<std::string_view>& pieces,
               size_t per_chunk, std::optional<size_t> stop_after = std::nullopt) {
  size_t budget = stop_after.value_or(SIZE_MAX);
  for (size_t i = 0; i < pieces.size(); i += per_chunk) {
    std::vector<std::string_view> chunk(
        pieces.begin() + static_cast<ptrdiff_t>(i),
        pieces.begin() + static_cast<ptrdiff_t>(std::min(pieces.size(), i + per_chunk)));
    size_t bytes = 0;
    for (size_t j = 0; j < chunk.size(); ++j) {
      if (bytes + chunk[j].size() >= budget) {
        chunk[j] = chunk[j].substr(0, budget - bytes);
        chunk.resize(j + 1);
        w.Write(chunk);
        return false;  // stopped short, as asked
      }
      bytes += chunk[j].size();
    }
    budget -= bytes;
    if (!w.Write(chunk)) return false;
  }
  return true;
}

// Holds the connection open without sending until the client leaves or
// the server stops.
void Stall(http::ResponseWriter& w) {
  while (!w.PeerGone()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w.Cut();
}

}  // namespace

std::string StatusJson(int code, std::string_view reason, std::string_view message,
                       const std::string& details_json, const std::string& continue_token) {
  std::string s = R"({"kind":"Status","apiVersion":"v1","metadata":{)";
  if (!continue_token.empty()) s += R"("continue":)" + Quote(continue_token);
  s += R"(},"status":")";
  s += code >= 200 && code < 300 ? "Success\"" : "Failure\"";
  if (!message.empty()) s += R"(,"message":)" + Quote(message);
  if (!reason.empty()) s += R"(,"reason":)" + Quote(reason);
  if (!details_json.empty()) s += R"(,"details":)" + details_json;
  if (code >= 200 && code < 300) return s + "}";  // success has no code, as the apiserver writes it
  return s + R"(,"code":)" + std::to_string(code) + "}";
}

struct Api::Target {
  int type = -1;
  const ResourceType* rt = nullptr;
  std::string namespace_;
  std::string name;
  bool legacy_watch = false;
};

struct Api::Query {
  bool watch = false;
  std::optional<std::string> rv;
  std::string rv_match;
  size_t limit = 0;
  std::string continue_token;
  LabelSelector labels;
  FieldSelector fields;
  std::optional<int64_t> timeout_seconds;
  bool bookmarks = false;
  std::optional<bool> send_initial_events;

  bool has_selector() const { return !labels.Empty() || !fields.Empty(); }
  bool Matches(const StoredObject& o) const {
    return labels.Matches(o.object->labels()) && fields.Matches(o.fields);
  }
};

Api::Api(ClusterState* state, ApiOptions options) : state_(state), options_(std::move(options)) {}

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

void Api::Handle(const http::Request& req, http::ResponseWriter& w) {
  const std::string& path = req.path;
  const http::Headers json = {{"Content-Type", "application/json"}};
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
  }
  // Split the path into segments.
  std::vector<std::string> seg;
  for (size_t pos = 1; pos <= path.size();) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    if (slash > pos) seg.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  std::string group, version;
  size_t rest = 0;
  if (seg.size() >= 2 && seg[0] == "api") {
    version = seg[1];
    rest = 2;
  } else if (seg.size() >= 3 && seg[0] == "apis") {
    group = seg[1];
    version = seg[2];
    rest = 3;
  } else {
    return SendNotFoundPage(w);
  }
  auto known_gv =
      std::any_of(state_->types().begin(), state_->types().end(),
                  [&](const ResourceType& t) { return t.group == group && t.version == version; });
  if (!known_gv) return SendNotFoundPage(w);
  if (seg.size() == rest) {
    if (req.method != "GET") return SendNotFoundPage(w);
    return (void)w.Send(200, json, ApiResourceListJson(state_->types(), group, version));
  }
  Target t;
  std::vector<std::string> r(seg.begin() + static_cast<ptrdiff_t>(rest), seg.end());
  if (!r.empty() && r[0] == "watch") {
    t.legacy_watch = true;
    r.erase(r.begin());
  }
  auto find = [&](const std::string& resource) {
    int i = state_->Find(group, resource);
    return i >= 0 && state_->types()[i].version == version ? i : -1;
  };
  if (r.size() >= 3 && r[0] == "namespaces" && find(r[2]) >= 0 &&
      state_->types()[find(r[2])].namespaced) {
    if (r.size() > 4) return SendNotFoundPage(w);
    t.type = find(r[2]);
    t.namespace_ = r[1];
    if (r.size() == 4) t.name = r[3];
  } else if (!r.empty() && r.size() <= 2 && find(r[0]) >= 0) {
    t.type = find(r[0]);
    if (r.size() == 2) {
      if (state_->types()[t.type].namespaced) return SendNotFoundPage(w);
      t.name = r[1];
    }
  } else {
    return SendNotFoundPage(w);
  }
  t.rt = &state_->types()[t.type];
  HandleResource(req, t, w);
}

void Api::HandleResource(const http::Request& req, const Target& t, http::ResponseWriter& w) {
  const uint64_t n = ++requests_;
  const Faults& f = options_.faults;
  if (f.slow_bytes_per_second > 0) w.SetRateLimit(f.slow_bytes_per_second);
  if (f.throttle.Contains(n)) {
    NoteFault("throttle");
    return SendReply(w, {429, "TooManyRequests", "Too many requests, please try again later.", "",
                         f.retry_after_seconds});
  }
  if (f.internal_error.Contains(n)) {
    NoteFault("internal-error");
    return SendReply(
        w, {500, "InternalError",
            "Internal error occurred: injected fault on request " + std::to_string(n), ""});
  }
  const std::string& m = req.method;
  if (!t.name.empty()) {
    if (t.legacy_watch) return SendNotFoundPage(w);
    if (m == "GET") return Count("get", t.rt->resource), Get(t, w);
    if (m == "PUT") return Count("update", t.rt->resource), Update(req, t, w);
    if (m == "DELETE") return Count("delete", t.rt->resource), Delete(req, t, w);
  } else if (m == "POST" && !t.legacy_watch && (!t.rt->namespaced || !t.namespace_.empty())) {
    return Count("create", t.rt->resource), Create(req, t, w);
  } else if (m == "GET") {
    Query q;
    q.watch = t.legacy_watch || ParseBool(req.Query("watch").value_or("false"));
    q.rv = req.Query("resourceVersion");
    q.rv_match = req.Query("resourceVersionMatch").value_or("");
    q.continue_token = req.Query("continue").value_or("");
    q.bookmarks = ParseBool(req.Query("allowWatchBookmarks").value_or("false"));
    if (auto s = req.Query("sendInitialEvents")) q.send_initial_events = ParseBool(*s);
    if (auto s = req.Query("limit"); s && !s->empty()) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
      if (ec != std::errc() || end != s->data() + s->size()) {
        return SendReply(
            w, {400, "BadRequest", "limit: invalid value " + Quote(*s) + ": not an integer", ""});
      }
      q.limit = v > 0 ? static_cast<size_t>(v) : 0;
    }
    if (auto s = req.Query("timeoutSeconds"); s && !s->empty()) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
      if (ec != std::errc() || end != s->data() + s->size()) {
        return SendReply(w,
                         {400, "BadRequest",
                          "timeoutSeconds: invalid value " + Quote(*s) + ": not an integer", ""});
      }
      q.timeout_seconds = v;
    }
    if (auto s = req.Query("labelSelector"); s && !s->empty()) {
      StatusOr<LabelSelector> sel = LabelSelector::Parse(*s);
      if (!sel.ok())
        return SendReply(
            w, {400, "BadRequest",
                "unable to parse requirement: " + std::string(sel.status().message()), ""});
      q.labels = std::move(sel).value();
    }
    if (auto s = req.Query("fieldSelector"); s && !s->empty()) {
      StatusOr<FieldSelector> sel = FieldSelector::Parse(*s);
      if (!sel.ok())
        return SendReply(w, {400, "BadRequest", std::string(sel.status().message()), ""});
      std::vector<std::string> allowed = t.rt->selectable_fields();
      for (const FieldSelector::Term& term : sel->terms()) {
        if (std::find(allowed.begin(), allowed.end(), term.field) == allowed.end()) {
          // Types with fields of their own have a conversion function that
          // says this; the others get the generic answer.
          std::string message = "field label not supported: " + term.field;
          if (t.rt->fields.empty()) {
            message = Quote(term.field) + " is not a known field selector: only ";
            for (size_t i = 0; i < allowed.size(); ++i)
              message += (i ? ", " : "") + Quote(allowed[i]);
          }
          return SendReply(w, {400, "BadRequest", message, ""});
        }
      }
      q.fields = std::move(sel).value();
    }
    Count(q.watch ? "watch" : "list", t.rt->resource);
    return q.watch ? Watch(t, q, n, w) : List(t, q, n, w);
  }
  SendReply(w, {405, "MethodNotAllowed",
                "the server does not allow this method on the requested resource", ""});
}

void Api::List(const Target& t, const Query& q, uint64_t n, http::ResponseWriter& w) {
  const Faults& f = options_.faults;
  if (q.send_initial_events)
    return SendReply(
        w, ListOptionsInvalid("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  if (!q.rv_match.empty()) {
    if (q.rv_match != "Exact" && q.rv_match != "NotOlderThan") {
      return SendReply(
          w, Invalid("ListOptions", "meta.k8s.io", "resourceVersionMatch", "FieldValueNotSupported",
                     "Unsupported value: " + Quote(q.rv_match) +
                         ": supported values: \"Exact\", \"NotOlderThan\", \"\""));
    }
    if (!q.rv || q.rv->empty()) {
      return SendReply(w,
                       ListOptionsInvalid(
                           "resourceVersionMatch",
                           "resourceVersionMatch is forbidden unless resourceVersion is provided"));
    }
    if (!q.continue_token.empty()) {
      return SendReply(
          w, ListOptionsInvalid("resourceVersionMatch",
                                "resourceVersionMatch is forbidden when continue is provided"));
    }
    if (q.rv_match == "Exact" && *q.rv == "0") {
      return SendReply(
          w, ListOptionsInvalid(
                 "resourceVersionMatch",
                 "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
    }
  }
  if (f.expire.Contains(n)) {
    NoteFault("expire");
    return SendReply(w,
                     {410, "Expired", "The resourceVersion for the provided list is too old.", ""});
  }
  const uint64_t current = state_->current_rv();
  ListQuery lq;
  lq.namespace_ = t.namespace_;
  if (q.has_selector()) lq.filter = [&q](const StoredObject& o) { return q.Matches(o); };
  lq.limit = q.limit;
  lq.count_remaining = !q.has_selector();
  bool continuing = false;
  if (!q.continue_token.empty()) {
    if (q.rv && !q.rv->empty() && *q.rv != "0") {
      return SendReply(w, {400, "BadRequest",
                           "specifying resource version is not allowed when using continue", ""});
    }
    auto token = DecodeContinue(q.continue_token);
    if (!token)
      return SendReply(
          w, {400, "BadRequest", "continue key is not valid: not a token this server issued", ""});
    lq.at_rv = token->first;
    lq.start_key = token->second;
    continuing = true;
  } else if (q.rv && !q.rv->empty()) {
    std::optional<uint64_t> rv = ParseRv(*q.rv);
    if (!rv)
      return SendReply(w, {400, "BadRequest", "invalid resource version " + Quote(*q.rv), ""});
    if (*rv == 0) {
      lq.limit = 0;  // "Any": served whole from the watch cache, as the apiserver does
    } else if (q.rv_match == "Exact" || (q.limit > 0 && q.rv_match.empty())) {
      lq.at_rv = *rv;
    } else if (*rv > current) {
      lq.at_rv = *rv;  // reported below as too large
    }
  }
  StatusOr<ListResult> result = state_->List(t.type, lq);
  if (!result.ok()) {
    if (result.status().code() == StatusCode::kFailedPrecondition) {
      ojson d = {
          {"causes",
           {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}}}};
      return SendReply(w, {504, "Timeout",
                           "Timeout: Too large resource version: " + std::to_string(lq.at_rv) +
                               ", current: " + std::to_string(current),
                           d.dump(), 1});
    }
    if (continuing) {
      std::string recovery = EncodeContinue(current, lq.start_key);
      http::Headers h = {{"Content-Type", "application/json"}};
      return (void)w.Send(
          410, h,
          StatusJson(
              410, "Expired",
              "The provided continue parameter is too old to display a consistent list result. You "
              "can "
              "start a new list without the continue parameter, or use the continue token in this "
              "response to retrieve the remainder of the results. Continuing with the provided "
              "token "
              "results in an inconsistent list - objects that were created, modified, or deleted "
              "between the time the first chunk was returned and now may show up in the list.",
              "", recovery));
    }
    return SendReply(w,
                     {410, "Expired", "The resourceVersion for the provided list is too old.", ""});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    list_items_[t.rt->resource] += result->items.size();
  }
  std::string head = R"({"kind":")" + t.rt->list_kind() + R"(","apiVersion":")" +
                     t.rt->api_version() + R"(","metadata":{"resourceVersion":")" +
                     std::to_string(result->rv) + "\"";
  if (!result->next_key.empty()) {
    head += R"(,"continue":")" + EncodeContinue(result->rv, result->next_key) + "\"";
    if (result->remaining >= 0)
      head += R"(,"remainingItemCount":)" + std::to_string(result->remaining);
  }
  head += R"(},"items":[)";
  std::vector<std::string_view> pieces;
  pieces.reserve(2 * result->items.size() + 2);
  pieces.push_back(head);
  for (size_t i = 0; i < result->items.size(); ++i) {
    if (i) pieces.push_back(",");
    pieces.push_back(result->items[i]->object->json());
  }
  pieces.push_back("]}");
  if (!w.Begin(200, {{"Content-Type", "application/json"}})) return;
  size_t total = 0;
  for (std::string_view p : pieces) total += p.size();
  const char* kind = f.cut.Contains(n)         ? "cut"
                     : f.malformed.Contains(n) ? "malformed"
                     : f.stall.Contains(n)     ? "stall"
                                               : nullptr;
  if (!kind) {
    WriteBody(w, pieces, 2 * kListItemsPerChunk);
    return;
  }
  NoteFault(kind);
  if (!WriteBody(w, pieces, 2 * kListItemsPerChunk, total / 2) && w.PeerGone()) return;
  if (std::string_view(kind) == "cut") return w.Cut();
  if (std::string_view(kind) == "stall") return Stall(w);
  w.Write("\"]}");  // malformed: the list ends inside an item
  w.End();
}

void Api::Watch(const Target& t, const Query& q, uint64_t n, http::ResponseWriter& w) {
  const Faults& f = options_.faults;
  if (!q.rv_match.empty() && !q.send_initial_events.value_or(false)) {
    return SendReply(
        w, ListOptionsInvalid(
               "resourceVersionMatch",
               "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
  }
  if (q.send_initial_events.value_or(false) && q.rv_match != "NotOlderThan") {
    return SendReply(
        w, ListOptionsInvalid(
               "sendInitialEvents",
               "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
  }
  std::optional<uint64_t> from;
  if (q.rv && !q.rv->empty() && *q.rv != "0") {
    from = ParseRv(*q.rv);
    if (!from)
      return SendReply(w, {400, "BadRequest", "invalid resource version " + Quote(*q.rv), ""});
  }
  const bool initial = q.send_initial_events.value_or(!from.has_value());
  const auto start = Clock::now();
  const auto deadline = start + (q.timeout_seconds && *q.timeout_seconds > 0
                                     ? std::chrono::seconds(*q.timeout_seconds)
                                     : options_.default_watch_timeout);
  ++watches_open_;
  struct Closing {
    std::atomic<int64_t>* open;
    ~Closing() { --*open; }
  } closing{&watches_open_};
  if (!w.Begin(200, {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}}))
    return;
  if (f.expire.Contains(n)) {
    NoteFault("expire");
    w.Write(ErrorEvent({410, "Expired",
                        "too old resource version: " + std::string(q.rv.value_or("0")) + " (" +
                            std::to_string(state_->floor(t.type)) + ")",
                        ""}));
    return;
  }
  const uint64_t current = state_->current_rv();
  if (from && *from > current) {
    ojson d = {
        {"causes",
         {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}}},
        {"retryAfterSeconds", 1}};
    w.Write(ErrorEvent({504, "Timeout",
                        "Timeout: Too large resource version: " + std::to_string(*from) +
                            ", current: " + std::to_string(current),
                        d.dump()}));
    return;
  }
  uint64_t pos = from.value_or(current);
  auto filter = [&q](const StoredObject& o) { return q.Matches(o); };
  if (initial) {
    ListQuery lq;
    lq.namespace_ = t.namespace_;
    if (q.has_selector()) lq.filter = filter;
    StatusOr<ListResult> list = state_->List(t.type, lq);
    if (!list.ok()) return;  // cannot happen at the current resourceVersion
    std::vector<std::string_view> pieces;
    pieces.reserve(3 * list->items.size());
    for (const StoredPtr& o : list->items) {
      pieces.push_back(kAddedPrefix);
      pieces.push_back(o->object->json());
      pieces.push_back(kEventSuffix);
    }
    if (!WriteBody(w, pieces, 3 * kWatchBatch)) return;
    pos = list->rv;
    if (q.send_initial_events.value_or(false) && q.bookmarks) {
      if (!w.Write(Bookmark(*t.rt, pos, true))) return;
    }
  } else if (pos < state_->floor(t.type)) {
    w.Write(ErrorEvent({410, "Expired",
                        "too old resource version: " + std::to_string(pos) + " (" +
                            std::to_string(state_->floor(t.type)) + ")",
                        ""}));
    return;
  }
  if (f.stall.Contains(n)) {
    NoteFault("stall");
    return Stall(w);
  }
  const bool cut = f.cut.Contains(n);
  const bool malformed = f.malformed.Contains(n);
  auto next_bookmark = Clock::now() + options_.bookmark_interval;
  std::deque<std::string> scratch;
  std::vector<std::string_view> pieces;
  for (;;) {
    auto now = Clock::now();
    if (now >= deadline) {
      if (q.bookmarks) w.Write(Bookmark(*t.rt, pos, false));
      return;
    }
    auto wake =
        std::min({deadline, now + std::chrono::seconds(1), q.bookmarks ? next_bookmark : deadline});
    WatchBatch batch = state_->Wait(t.type, pos, kWatchBatch, wake);
    if (batch.stopped || batch.expired) return;  // a watcher that fell behind the history is closed
    scratch.clear();
    pieces.clear();
    for (const Event& e : batch.events) {
      std::string_view prefix;
      std::string_view json = e.object->object->json();
      if (!q.has_selector()) {
        prefix = e.type == EventType::kAdded      ? kAddedPrefix
                 : e.type == EventType::kModified ? kModifiedPrefix
                                                  : kDeletedPrefix;
      } else {
        const bool now_in = e.type != EventType::kDeleted && filter(*e.object);
        const bool was_in = e.prev && filter(*e.prev);
        if (now_in && was_in) {
          prefix = kModifiedPrefix;
        } else if (now_in) {
          prefix = kAddedPrefix;
        } else if (was_in) {
          prefix = kDeletedPrefix;
          if (e.type != EventType::kDeleted)
            json = scratch.emplace_back(Restamp(e.prev->object->json(), e.rv));
        } else {
          continue;
        }
      }
      pieces.push_back(prefix);
      pieces.push_back(json);
      pieces.push_back(kEventSuffix);
    }
    if (!pieces.empty() && (cut || malformed)) {
      if (cut) {
        NoteFault("cut");
        std::string_view event =
            scratch.emplace_back(std::string(pieces[0]) + std::string(pieces[1]));
        w.Write(event.substr(0, event.size() / 2));
        return w.Cut();
      }
      NoteFault("malformed");
      w.Write(std::string(pieces[0]) + R"({"kind":")" + t.rt->kind + R"(","metadata":{"name":}}})" +
              "\n");
      return;
    }
    if (!pieces.empty() && !w.Write(pieces)) return;
    pos = batch.position;
    if (q.bookmarks && Clock::now() >= next_bookmark) {
      if (!w.Write(Bookmark(*t.rt, pos, false))) return;
      next_bookmark = Clock::now() + options_.bookmark_interval;
    }
    if (w.PeerGone()) return;
  }
}

void Api::Get(const Target& t, http::ResponseWriter& w) {
  StoredPtr o = state_->Get(t.type, StateKey(*t.rt, t.namespace_, t.name));
  if (!o) return SendReply(w, NotFound(*t.rt, t.name));
  w.Send(200, {{"Content-Type", "application/json"}}, o->object->json());
}

namespace {

// Parses a create or update body and checks what the URL fixes: kind,
// apiVersion, namespace (and name, for an update).
std::optional<Reply> ParseBody(const http::Request& req, const ResourceType& rt,
                               const std::string& namespace_, ojson* out) {
  if (std::string type = req.Header("Content-Type");
      !type.empty() && type.find("json") == std::string::npos) {
    return Reply{415, "UnsupportedMediaType",
                 "the body of the request was in an unknown format - accepted media types include: "
                 "application/json",
                 ""};
  }
  ojson j = ojson::parse(req.body, nullptr, false);
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
  *out = std::move(j);
  return std::nullopt;
}

// Defaults the apiserver applies to every namespace.
void DefaultNamespace(ojson& j) {
  if (!j.contains("spec")) j["spec"] = {{"finalizers", {"kubernetes"}}};
  if (!j.contains("status")) j["status"] = {{"phase", "Active"}};
}

}  // namespace

void Api::Create(const http::Request& req, const Target& t, http::ResponseWriter& w) {
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
  if (reply) return SendReply(w, *reply);
  if (!stored.ok())
    return SendReply(w, {500, "InternalError",
                         "Internal error occurred: " + std::string(stored.status().message()), ""});
  w.Send(201, {{"Content-Type", "application/json"}}, (*stored)->object->json());
}

void Api::Update(const http::Request& req, const Target& t, http::ResponseWriter& w) {
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
          reply = Reply{409, "Conflict",
                        "Operation cannot be fulfilled on " + t.rt->resource +
                            (t.rt->group.empty() ? "" : "." + t.rt->group) + " " + Quote(name) +
                            ": the object has been modified; please apply your changes to the "
                            "latest version and "
                            "try again",
                        Details(name, t.rt->group, t.rt->resource)};
          return Status::FailedPrecondition(name);
        }
        ojson before = ojson::parse(current->object->json(), nullptr, false);
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
  if (reply) return SendReply(w, *reply);
  if (!stored.ok())
    return SendReply(w, {500, "InternalError",
                         "Internal error occurred: " + std::string(stored.status().message()), ""});
  w.Send(200, {{"Content-Type", "application/json"}}, (*stored)->object->json());
}

void Api::Delete(const http::Request& req, const Target& t, http::ResponseWriter& w) {
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
          reply = Reply{409, "Conflict",
                        "Operation cannot be fulfilled on " + t.rt->resource + " " + Quote(t.name) +
                            ": " + conflict,
                        Details(t.name, t.rt->group, t.rt->resource)};
          return Status::FailedPrecondition(t.name);
        }
        return Change{Change::kDelete, Restamp(current->object->json(), rv)};
      });
  if (reply) return SendReply(w, *reply);
  if (!stored.ok())
    return SendReply(w, {500, "InternalError",
                         "Internal error occurred: " + std::string(stored.status().message()), ""});
  w.Send(200, {{"Content-Type", "application/json"}},
         StatusJson(200, "", "", Details(t.name, t.rt->group, t.rt->resource, uid)));
}

}  // namespace kcache::serve
