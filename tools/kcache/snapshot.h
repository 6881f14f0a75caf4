// SPDX-License-Identifier: Apache-2.0

// `kcache snapshot create|export|import|verify`.

#ifndef KCACHE_TOOLS_KCACHE_SNAPSHOT_H_
#define KCACHE_TOOLS_KCACHE_SNAPSHOT_H_

#include <iosfwd>
#include <string>

#include "kcache/snapshot.h"
#include "kcache/status.h"

namespace kcache::tool {

struct SnapshotOptions {
  std::string cache_dir;         // create, export: the cache; import: the new cache
  std::string target;            // create: the output directory; export, import, verify: the file
  int zstd_level = 1;            // export
  bool exclude_secrets = false;  // export: leave the secrets keyspace out
  // A progress line on `progress` (a terminal) while the rows stream.
  bool progress = false;
};

// The progress line of an export, import or verify (`verb`), `seconds` in:
// objects done of the manifest's, row and file megabytes, the rate, and the
// time left.
std::string SnapshotProgressLine(const SnapshotProgress& progress, const char* verb,
                                 double seconds);

// A consistent copy of the cache as a directory (openable as a cache).
Status RunSnapshotCreate(const SnapshotOptions& options, std::ostream& out, std::ostream& progress);
Status RunSnapshotExport(const SnapshotOptions& options, std::ostream& out, std::ostream& progress);
Status RunSnapshotImport(const SnapshotOptions& options, std::ostream& out, std::ostream& progress);
Status RunSnapshotVerify(const SnapshotOptions& options, std::ostream& out, std::ostream& progress);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_SNAPSHOT_H_
