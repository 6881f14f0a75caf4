// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/api_query.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/resource_version.h"
#include "util/base64.h"

namespace kcache::serve {
namespace {

using ojson = nlohmann::ordered_json;

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

PathKind ParseTarget(const std::vector<ResourceType>& types, const std::string& path, Target* t) {
  std::vector<std::string> seg;
  for (size_t pos = 1; pos <= path.size();) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    if (slash > pos) seg.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  size_t rest = 0;
  if (seg.size() >= 2 && seg[0] == "api") {
    t->version = seg[1];
    rest = 2;
  } else if (seg.size() >= 3 && seg[0] == "apis") {
    t->group = seg[1];
    t->version = seg[2];
    rest = 3;
  } else {
    return PathKind::kNotFound;
  }
  auto find = [&](const std::string& resource) {
    for (size_t i = 0; i < types.size(); ++i) {
      const ResourceType& rt = types[i];
      if (rt.group == t->group && rt.version == t->version && rt.resource == resource) {
        return static_cast<int>(i);
      }
    }
    return -1;
  };
  const bool known_gv = std::any_of(types.begin(), types.end(), [&](const ResourceType& rt) {
    return rt.group == t->group && rt.version == t->version;
  });
  if (!known_gv) return PathKind::kNotFound;
  if (seg.size() == rest) return PathKind::kResourceList;
  std::vector<std::string> r(seg.begin() + static_cast<ptrdiff_t>(rest), seg.end());
  if (!r.empty() && r[0] == "watch") {
    t->legacy_watch = true;
    r.erase(r.begin());
  }
  if (r.size() >= 3 && r[0] == "namespaces" && find(r[2]) >= 0 && types[find(r[2])].namespaced) {
    if (r.size() > 5 || (r.size() == 5 && (r[4] != "status" || t->legacy_watch))) {
      return PathKind::kNotFound;
    }
    t->type = find(r[2]);
    t->namespace_ = r[1];
    if (r.size() >= 4) t->name = r[3];
    if (r.size() == 5) t->subresource = r[4];
  } else if (!r.empty() && r.size() <= 3 && find(r[0]) >= 0) {
    t->type = find(r[0]);
    if (r.size() >= 2) {
      if (types[t->type].namespaced) return PathKind::kNotFound;
      t->name = r[1];
    }
    if (r.size() == 3) {
      if (r[2] != "status" || t->legacy_watch) return PathKind::kNotFound;
      t->subresource = r[2];
    }
  } else {
    return PathKind::kNotFound;
  }
  t->rt = &types[t->type];
  return PathKind::kResource;
}

std::optional<Reply> ParseQuery(const serve::http::Request& req, const Target& t, Query* q) {
  q->watch = t.legacy_watch || ParseBool(req.Query("watch").value_or("false"));
  q->rv = req.Query("resourceVersion");
  q->rv_match = req.Query("resourceVersionMatch").value_or("");
  q->continue_token = req.Query("continue").value_or("");
  q->bookmarks = ParseBool(req.Query("allowWatchBookmarks").value_or("false"));
  if (auto s = req.Query("sendInitialEvents")) q->send_initial_events = ParseBool(*s);
  if (auto s = req.Query("limit"); s && !s->empty()) {
    std::optional<int64_t> v = ParseInt(*s);
    if (!v)
      return Reply{400, "BadRequest", "limit: invalid value " + Quote(*s) + ": not an integer", ""};
    q->limit = *v > 0 ? static_cast<size_t>(*v) : 0;
  }
  if (auto s = req.Query("timeoutSeconds"); s && !s->empty()) {
    std::optional<int64_t> v = ParseInt(*s);
    if (!v) {
      return Reply{400, "BadRequest",
                   "timeoutSeconds: invalid value " + Quote(*s) + ": not an integer", ""};
    }
    q->timeout_seconds = *v;
  }
  if (auto s = req.Query("labelSelector"); s && !s->empty()) {
    StatusOr<LabelSelector> sel = LabelSelector::Parse(*s);
    if (!sel.ok()) {
      return Reply{400, "BadRequest",
                   "unable to parse requirement: " + std::string(sel.status().message()), ""};
    }
    q->labels = std::move(sel).value();
  }
  if (auto s = req.Query("fieldSelector"); s && !s->empty()) {
    StatusOr<FieldSelector> sel = FieldSelector::Parse(*s);
    if (!sel.ok()) return Reply{400, "BadRequest", std::string(sel.status().message()), ""};
    std::vector<std::string> allowed = t.rt->selectable_fields();
    for (const FieldSelector::Term& term : sel->terms()) {
      if (std::find(allowed.begin(), allowed.end(), term.field) == allowed.end()) {
        // Types with fields of their own have a conversion function that
        // says this; the others get the generic answer.
        std::string message = "field label not supported: " + term.field;
        if (t.rt->fields.empty()) {
          message = Quote(term.field) + " is not a known field selector: only ";
          for (size_t i = 0; i < allowed.size(); ++i) {
            message += (i ? ", " : "") + Quote(allowed[i]);
          }
        }
        return Reply{400, "BadRequest", message, ""};
      }
    }
    q->fields = std::move(sel).value();
  }
  return std::nullopt;
}

// The list options the apiserver refuses, as it words them.
std::optional<Reply> CheckListOptions(const Query& q) {
  if (q.send_initial_events) {
    return ListOptionsInvalid("sendInitialEvents", "sendInitialEvents is forbidden for list");
  }
  if (q.rv_match.empty()) return std::nullopt;
  // Every error, in the apiserver's order (ValidateListOptions).
  std::vector<FieldError> errors;
  auto forbidden = [&](const std::string& detail) {
    errors.push_back({"resourceVersionMatch", "FieldValueForbidden", "Forbidden: " + detail});
  };
  if (!q.rv || q.rv->empty())
    forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided");
  if (!q.continue_token.empty())
    forbidden("resourceVersionMatch is forbidden when continue is provided");
  if (q.rv_match == "Exact") {
    if (q.rv && *q.rv == "0")
      forbidden("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
  } else if (q.rv_match != "NotOlderThan") {
    errors.push_back({"resourceVersionMatch", "FieldValueNotSupported",
                      "Unsupported value: " + Quote(q.rv_match) +
                          ": supported values: \"Exact\", \"NotOlderThan\", \"\""});
  }
  if (errors.empty()) return std::nullopt;
  return Invalid("ListOptions", "meta.k8s.io", errors);
}

std::optional<Reply> PlanList(const Query& q, ListPlan* plan) {
  if (std::optional<Reply> bad = CheckListOptions(q)) return bad;
  *plan = ListPlan{};
  plan->limit = q.limit;
  if (!q.continue_token.empty()) {
    if (q.rv && !q.rv->empty() && *q.rv != "0") {
      return Reply{400, "BadRequest",
                   "specifying resource version is not allowed when using continue", ""};
    }
    auto token = DecodeContinue(q.continue_token);
    if (!token) {
      return Reply{400, "BadRequest", "continue key is not valid: not a token this server issued",
                   ""};
    }
    plan->read = ListPlan::Read::kExact;
    plan->rv = token->rv;
    plan->start = token->start;
    plan->remaining = token->remaining;
    plan->continuing = true;
    return std::nullopt;
  }
  if (!q.rv || q.rv->empty()) return std::nullopt;
  std::optional<uint64_t> rv = ParseResourceVersion(*q.rv);
  if (!rv) return Reply{400, "BadRequest", "invalid resource version " + Quote(*q.rv), ""};
  if (*rv == 0) {
    plan->limit = 0;  // Any: served whole from the watch cache, as the apiserver does
  } else if (q.rv_match == "Exact" || (q.limit > 0 && q.rv_match.empty())) {
    plan->read = ListPlan::Read::kExact;
    plan->rv = *rv;
  } else {
    plan->read = ListPlan::Read::kNotOlderThan;
    plan->rv = *rv;
  }
  return std::nullopt;
}

std::optional<Reply> PlanWatch(const Query& q, std::optional<uint64_t>* from) {
  if (std::optional<Reply> bad = CheckWatchOptions(q)) return bad;
  from->reset();
  if (!q.rv || q.rv->empty() || *q.rv == "0") return std::nullopt;
  *from = ParseResourceVersion(*q.rv);
  if (!*from) return Reply{400, "BadRequest", "invalid resource version " + Quote(*q.rv), ""};
  return std::nullopt;
}

// The watch options the apiserver refuses, as it words them.
std::optional<Reply> CheckWatchOptions(const Query& q) {
  if (!q.rv_match.empty() && !q.send_initial_events.value_or(false)) {
    return ListOptionsInvalid(
        "resourceVersionMatch",
        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
  }
  if (q.send_initial_events.value_or(false) && q.rv_match != "NotOlderThan") {
    return ListOptionsInvalid(
        "sendInitialEvents",
        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
  }
  return std::nullopt;
}

bool ParseBool(std::string_view v) {
  if (v == "0") return false;
  std::string lower(v);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower != "false";
}

std::string EncodeContinue(uint64_t rv, const std::string& start,
                           std::optional<int64_t> remaining) {
  ojson j{{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", start}};
  if (remaining) j["remaining"] = *remaining;
  std::string b = Base64Encode(j.dump());
  while (!b.empty() && b.back() == '=') b.pop_back();
  std::replace(b.begin(), b.end(), '+', '-');
  std::replace(b.begin(), b.end(), '/', '_');
  return b;
}

std::optional<ContinueToken> DecodeContinue(std::string token) {
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
  ContinueToken out{j["rv"].get<uint64_t>(), j["start"].get<std::string>(), std::nullopt};
  if (j.contains("remaining") && j["remaining"].is_number_integer()) {
    out.remaining = j["remaining"].get<int64_t>();
  }
  return out;
}

}  // namespace kcache::serve
