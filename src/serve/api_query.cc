#include "serve/api_query.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include <nlohmann/json.hpp>

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

std::optional<Reply> ParseQuery(const http::Request& req, const Target& t, Query* q) {
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

}  // namespace kcache::serve
