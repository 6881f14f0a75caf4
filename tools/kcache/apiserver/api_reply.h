// SPDX-License-Identifier: Apache-2.0

// What the test server's API writes: Status errors as the apiserver words
// them, watch events and bookmarks, and bodies sent in chunks (or cut short
// for a fault).

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_API_REPLY_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_API_REPLY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/kcache/apiserver/http_server.h"
#include "tools/kcache/apiserver/resource_types.h"

namespace kcache::serve {

inline constexpr std::string_view kAddedPrefix = R"({"type":"ADDED","object":)";
inline constexpr std::string_view kModifiedPrefix = R"({"type":"MODIFIED","object":)";
inline constexpr std::string_view kDeletedPrefix = R"({"type":"DELETED","object":)";
inline constexpr std::string_view kEventSuffix = "}\n";
// Events per watch write, and list items per chunk of a LIST body.
inline constexpr size_t kWatchBatch = 512;
inline constexpr size_t kListItemsPerChunk = 400;

// An error answer: HTTP code, Status reason and message, Status details.
struct Reply {
  int code = 0;
  std::string reason;
  std::string message;
  std::string details;  // JSON object or ""
  int64_t retry_after = 0;
};

// `s` as a JSON string.
std::string Quote(std::string_view s);
// A Status details object.
std::string Details(const std::string& name, const std::string& group, const std::string& kind,
                    const std::string& uid = "");

// The body of a Status object as the apiserver writes it.
std::string StatusJson(int code, std::string_view reason, std::string_view message,
                       const std::string& details_json = "",
                       const std::string& continue_token = "");

// Sends `r` as a Status (with Retry-After when it has one).
void SendReply(serve::http::ResponseWriter& w, const Reply& r);
// The apiserver's plain-text 404 for paths it does not serve.
void SendNotFoundPage(serve::http::ResponseWriter& w);

// 404 NotFound for object `name` of type `t`.
Reply NotFound(const ResourceType& t, const std::string& name);
// 422 Invalid with one cause.
Reply Invalid(std::string_view kind, std::string_view group, std::string_view field,
              std::string_view cause_reason, std::string_view detail);
// 422 Invalid for a forbidden ListOptions field.
Reply ListOptionsInvalid(std::string_view field, std::string_view detail);

// One field error of a 422: its field, cause reason and detail.
struct FieldError {
  std::string field;
  std::string reason;  // "FieldValueForbidden", "FieldValueNotSupported"
  std::string detail;  // "Forbidden: ...", "Unsupported value: ..."
};
// 422 Invalid for several errors of one object, as the apiserver words
// them: "KIND.GROUP "" is invalid: [F1: D1, F2: D2]" with a cause each (one
// error: no brackets).
Reply Invalid(std::string_view kind, std::string_view group, const std::vector<FieldError>& errors);

// 410 for a watch from before the history the server keeps.
Reply TooOldResourceVersion(std::string_view rv, std::string_view floor);
// 410 for a list at a resourceVersion the server no longer keeps.
Reply ListTooOld();
// 504 for a resourceVersion the server has not reached (retry after 1 s).
Reply TooLargeResourceVersion(std::string_view rv, std::string_view current);
// 410 for a continue token from before the history, carrying the token that
// continues the list from now.
void SendContinueExpired(serve::http::ResponseWriter& w, const std::string& recovery_token);

// `json` with metadata.resourceVersion set to `rv`.
std::string Restamp(std::string_view json, uint64_t rv);
// A BOOKMARK event, marked as the end of initial events if asked.
std::string Bookmark(const ResourceType& t, uint64_t rv, bool initial_events_end);
// An ERROR event carrying `r` as a Status.
std::string ErrorEvent(const Reply& r);

// Sends `pieces` as chunks of up to `per_chunk` pieces; with `stop_after`,
// sends only that many bytes and returns false (the caller cuts or stalls).
// False also when the peer is gone.
bool WriteBody(serve::http::ResponseWriter& w, const std::vector<std::string_view>& pieces,
               size_t per_chunk, std::optional<size_t> stop_after = std::nullopt);
// Holds the connection open without sending until the client leaves or
// the server stops.
void Stall(serve::http::ResponseWriter& w);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_API_REPLY_H_
