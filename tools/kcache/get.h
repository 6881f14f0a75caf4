// `kcache get`: reads objects back from a cache directory (read-only, also
// while `kcache sync` writes it) or a snapshot file, in kubectl's idiom.

#ifndef KCACHE_TOOLS_KCACHE_GET_H_
#define KCACHE_TOOLS_KCACHE_GET_H_

#include <iosfwd>
#include <string>

#include "kcache/status.h"

namespace kcache::tool {

struct GetOptions {
  std::string cache_dir;  // one of cache_dir and snapshot
  std::string snapshot;
  std::string resource;  // a keyspace ("pods", "deployments.apps"), singular, kind or short name
  std::string name;      // one object; empty: a list
  std::string namespace_ = "default";
  bool all_namespaces = false;
  std::string label_selector;
  std::string field_selector;
  // An index query "INDEX=VALUE", over any index recorded in the cache.
  std::string index;
  std::string output;   // "" (a table), "wide", "json", "yaml" or "name"
  std::string sort_by;  // a JSONPath such as "{.metadata.name}"
};

Status RunGet(const GetOptions& options, std::ostream& out);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_GET_H_
