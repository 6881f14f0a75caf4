// SPDX-License-Identifier: Apache-2.0

// The list and watch verbs of kcache serve's API, over any ApiSource: the
// synthetic cluster's, a cache's and a snapshot's. What a list reads, the
// errors it answers, how a watch starts, filters and ends, and how events
// and bookmarks are written are decided here, once, as kube-apiserver does
// (docs/serve.md has the table).

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_API_SERVE_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_API_SERVE_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kcache/object.h"
#include "tools/kcache/apiserver/api_query.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/apiserver/api_source.h"
#include "tools/kcache/apiserver/http_server.h"

namespace kcache::serve {

// Writes objects as rows of a Table (meta.k8s.io), for a request that asks
// for them.
//
// Thread-safety: one request uses it at a time.
class TableWriter {
 public:
  virtual ~TableWriter() = default;
  // The Table's opening up to its rows, with `metadata` (a JSON object) and,
  // if `columns`, the column definitions.
  virtual std::string Head(const std::string& metadata, bool columns) const = 0;
  // `object` as one row.
  virtual std::string Row(const Object& object) const = 0;
};

// What the synthetic cluster does to a body, for a fault: cut it halfway,
// break it (a list ending inside an item, an event that is not an object),
// or hold the connection without sending more.
enum class BodyFault { kNone, kCut, kMalformed, kStall };

// Whether an Accept header asks for objects without metadata.managedFields
// (KEP-5958: `application/json;drop=metadata.managedFields`, targets joined
// by '+'). The first media range kcache serve can answer decides: JSON, or
// a wildcard.
bool AcceptDropsManagedFields(std::string_view accept);

// `o` as a response carries it: without metadata.managedFields if `drop`.
ObjectPtr Shown(const ObjectPtr& o, bool drop);

struct ListCall {
  const TableWriter* tables = nullptr;  // null: objects
  bool drop_managed_fields = false;     // objects without metadata.managedFields
  BodyFault fault = BodyFault::kNone;
  // Told the fault when it is injected ("cut", "malformed", "stall").
  std::function<void(const char*)> injected;
};

// Answers a LIST of `t` with `q` from `source`; returns how many objects it
// sent.
size_t ServeList(ApiSource& source, const Target& t, const Query& q, const ListCall& call,
                 serve::http::ResponseWriter& w);

struct WatchCall {
  // How often a quiet watch that allows bookmarks gets one.
  std::chrono::milliseconds bookmark_interval{std::chrono::seconds(60)};
  // A watch without timeoutSeconds ends after this long.
  std::chrono::seconds default_timeout{1800};
  const TableWriter* tables = nullptr;  // null: objects
  bool drop_managed_fields = false;     // objects without metadata.managedFields
  // Faults: an ERROR event right after the headers, ending the watch; or,
  // after the initial events, a stall, or the first event cut or broken.
  std::optional<Reply> error;
  BodyFault fault = BodyFault::kNone;
  // Told each fault as it is injected ("cut", "malformed", "stall").
  std::function<void(const char*)> injected;
};

// Answers a WATCH of `t` with `q` from `source`, until its timeout, the
// client leaves or the source stops.
void ServeWatch(ApiSource& source, const Target& t, const Query& q, const WatchCall& call,
                serve::http::ResponseWriter& w);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_API_SERVE_H_
