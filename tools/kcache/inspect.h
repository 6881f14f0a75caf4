// SPDX-License-Identifier: Apache-2.0

// Offline inspection of a cache directory or a snapshot file:
// `kcache stats`, `kcache tree` and `kcache diff`.

#ifndef KCACHE_TOOLS_KCACHE_INSPECT_H_
#define KCACHE_TOOLS_KCACHE_INSPECT_H_

#include <iosfwd>
#include <string>

#include "kcache/status_or.h"

namespace kcache::tool {

struct StatsOptions {
  std::string cache_dir;  // one of cache_dir and snapshot
  std::string snapshot;
  std::string namespace_;  // only this namespace in the per-namespace table
};

// Per resource: kind, objects, bytes on disk, resume point, last sync; then
// per namespace and resource: objects and bytes of JSON.
Status RunStats(const StatsOptions& options, std::ostream& out);

struct TreeOptions {
  std::string cache_dir;
  std::string snapshot;
  std::string resource;
  std::string name;
  std::string namespace_ = "default";
};

// The object's owners (through metadata.ownerReferences, up to the top),
// then everything that depends on it, as a tree.
Status RunTree(const TreeOptions& options, std::ostream& out);

struct DiffOptions {
  std::string from;  // a cache directory or a snapshot file
  std::string to;
  bool summary_only = false;  // counts per resource, no object lines
};

// Added, removed and changed objects per resource, with a field-level diff
// of each changed object. Returns whether there were differences.
StatusOr<bool> RunDiff(const DiffOptions& options, std::ostream& out);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_INSPECT_H_
