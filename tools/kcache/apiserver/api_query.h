// SPDX-License-Identifier: Apache-2.0

// The request side of the test server's API: what a resource path names,
// the list and watch query parameters, and continue tokens.

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_API_QUERY_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_API_QUERY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kcache/field_selector.h"
#include "kcache/label_selector.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/http_server.h"

namespace kcache::serve {

// What a resource path names.
struct Target {
  std::string group;
  std::string version;
  int type = -1;  // index in the server's types
  const ResourceType* rt = nullptr;
  std::string namespace_;
  std::string name;
  std::string subresource;  // "" or "status"
  bool legacy_watch = false;
};

// The query parameters of a list or watch.
struct Query {
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
};

enum class PathKind {
  kNotFound,      // not an API path of `types`: the apiserver's plain 404 page
  kResourceList,  // a group version's APIResourceList: /api/v1, /apis/GROUP/VERSION
  kResource,      // a resource, a namespace's resource, an object or its status
};
// Reads `path` (percent-decoded) as the apiserver routes it among `types`:
// sets the group and version of `t` for kResourceList, all of it for
// kResource.
PathKind ParseTarget(const std::vector<ResourceType>& types, const std::string& path, Target* t);

// Reads the list and watch parameters of `req` for `t` into `q`; a 400
// BadRequest (as the apiserver words it) for a bad limit, timeout or
// selector.
std::optional<Reply> ParseQuery(const serve::http::Request& req, const Target& t, Query* q);

// The list (watch) options the apiserver refuses, with its answer.
std::optional<Reply> CheckListOptions(const Query& q);
std::optional<Reply> CheckWatchOptions(const Query& q);

// Which state a LIST reads, as kube-apiserver decides it from the list's
// parameters: the current one; exactly one version (Exact, a continue
// token, or a paginated list at a version with no match: what etcd
// serves); or one at least as new as a version (NotOlderThan, or a version
// without a limit: what the watch cache serves). Version "0" is Any: the
// whole current list, its limit ignored.
struct ListPlan {
  enum class Read { kCurrent, kExact, kNotOlderThan };
  Read read = Read::kCurrent;
  uint64_t rv = 0;          // the version of kExact and kNotOlderThan
  std::string start;        // the first key to list, from a continue token
  size_t limit = 0;         // objects per page; 0: the whole list
  bool continuing = false;  // from a continue token (kExact at its version)
  // From the continue token, where the page before counted them: the
  // objects from `start` on, so that remainingItemCount is not counted
  // again on every page (a million objects, page by page, is quadratic).
  std::optional<int64_t> remaining;
};

// Checks the list options (CheckListOptions) and resolves them into
// `plan`; the apiserver's 400 or 422 for what it refuses. Both servers of
// kcache serve list by this plan.
std::optional<Reply> PlanList(const Query& q, ListPlan* plan);

// Checks the watch options (CheckWatchOptions) and reads where the watch
// starts: after `*from`, or from the current state (no version, or "0");
// the apiserver's 400 or 422 for what it refuses.
std::optional<Reply> PlanWatch(const Query& q, std::optional<uint64_t>* from);

// Query booleans as the apiserver reads them: anything but "0" and "false".
bool ParseBool(std::string_view v);

// Continue tokens carry the list's resourceVersion and the next key, as
// the apiserver's: URL-safe unpadded base64 of {"v":..,"rv":..,"start":..}.
// A continue token of kcache serve: the apiserver's fields (the list's
// version and the next key), and the objects left from that key on when
// the page counted them.
struct ContinueToken {
  uint64_t rv = 0;
  std::string start;
  std::optional<int64_t> remaining;
};
std::string EncodeContinue(uint64_t rv, const std::string& start,
                           std::optional<int64_t> remaining = std::nullopt);
std::optional<ContinueToken> DecodeContinue(std::string token);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_API_QUERY_H_
