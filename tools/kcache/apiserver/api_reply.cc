// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/api_reply.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "exec/fiber.h"

namespace kcache::serve {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kNotFoundPage = "404 page not found\n";

}  // namespace

std::string Quote(std::string_view s) { return ojson(std::string(s)).dump(); }

std::string Details(const std::string& name, const std::string& group, const std::string& kind,
                    const std::string& uid) {
  ojson d = ojson::object();
  if (!name.empty()) d["name"] = name;
  if (!group.empty()) d["group"] = group;
  d["kind"] = kind;
  if (!uid.empty()) d["uid"] = uid;
  return d.dump();
}

namespace {

// The Status details of `r`, with retryAfterSeconds if it has one.
std::string DetailsOf(const Reply& r) {
  if (r.retry_after <= 0) return r.details;
  ojson d = r.details.empty() ? ojson::object() : ojson::parse(r.details);
  d["retryAfterSeconds"] = r.retry_after;
  return d.dump();
}

}  // namespace

void SendReply(serve::http::ResponseWriter& w, const Reply& r) {
  serve::http::Headers headers = {{"Content-Type", "application/json"},
                                  {"Cache-Control", "no-cache, private"}};
  if (r.retry_after > 0) headers.emplace_back("Retry-After", std::to_string(r.retry_after));
  w.Send(r.code, headers, StatusJson(r.code, r.reason, r.message, DetailsOf(r)));
}

Reply TooOldResourceVersion(std::string_view rv, std::string_view floor) {
  return {410, "Expired",
          "too old resource version: " + std::string(rv) + " (" + std::string(floor) + ")", ""};
}

Reply ListTooOld() {
  return {410, "Expired", "The resourceVersion for the provided list is too old.", ""};
}

Reply TooLargeResourceVersion(std::string_view rv, std::string_view current) {
  ojson d = {
      {"causes",
       {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}}}};
  return {504, "Timeout",
          "Timeout: Too large resource version: " + std::string(rv) +
              ", current: " + std::string(current),
          d.dump(), 1};
}

void SendContinueExpired(serve::http::ResponseWriter& w, const std::string& recovery_token) {
  w.Send(410, {{"Content-Type", "application/json"}},
         StatusJson(410, "Expired",
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use the "
                    "continue token in this response to retrieve the remainder of the results. "
                    "Continuing with the provided token results in an inconsistent list - objects "
                    "that were created, modified, or deleted between the time the first chunk was "
                    "returned and now may show up in the list.",
                    "", recovery_token));
}

void SendNotFoundPage(serve::http::ResponseWriter& w) {
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
  return Invalid(kind, group,
                 {{std::string(field), std::string(cause_reason), std::string(detail)}});
}

Reply Invalid(std::string_view kind, std::string_view group,
              const std::vector<FieldError>& errors) {
  std::string list;
  ojson causes = ojson::array();
  for (const FieldError& e : errors) {
    list += (list.empty() ? "" : ", ") + e.field + ": " + e.detail;
    causes.push_back({{"reason", e.reason}, {"message", e.detail}, {"field", e.field}});
  }
  if (errors.size() > 1) list = "[" + list + "]";
  std::string message = std::string(kind) + "." + std::string(group) + " \"\" is invalid: " + list;
  ojson d = {{"group", group}, {"kind", kind}, {"causes", causes}};
  return {422, "Invalid", message, d.dump()};
}

Reply ListOptionsInvalid(std::string_view field, std::string_view detail) {
  return Invalid("ListOptions", "meta.k8s.io", field, "FieldValueForbidden",
                 "Forbidden: " + std::string(detail));
}

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
  return R"({"type":"ERROR","object":)" + StatusJson(r.code, r.reason, r.message, DetailsOf(r)) +
         "}\n";
}

bool WriteBody(serve::http::ResponseWriter& w, const std::vector<std::string_view>& pieces,
               size_t per_chunk, std::optional<size_t> stop_after) {
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

void Stall(serve::http::ResponseWriter& w) {
  while (!w.PeerGone()) {
    exec::SleepUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(50), {});
  }
  w.Cut();
}

}  // namespace kcache::serve
