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
#include "kcache/object.h"
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
  // `fields`: the object's selectable fields, as field selectors read them.
  bool Matches(const Object& object, const Labels& fields) const {
    return labels.Matches(object.labels()) && this->fields.Matches(fields);
  }
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
std::optional<Reply> ParseQuery(const http::Request& req, const Target& t, Query* q);

// The list (watch) options the apiserver refuses, with its answer.
std::optional<Reply> CheckListOptions(const Query& q);
std::optional<Reply> CheckWatchOptions(const Query& q);

// Query booleans as the apiserver reads them: anything but "0" and "false".
bool ParseBool(std::string_view v);

// Continue tokens carry the list's resourceVersion and the next key, as
// the apiserver's: URL-safe unpadded base64 of {"v":..,"rv":..,"start":..}.
std::string EncodeContinue(uint64_t rv, const std::string& start);
std::optional<std::pair<uint64_t, std::string>> DecodeContinue(std::string token);

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_API_QUERY_H_
