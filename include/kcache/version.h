// SPDX-License-Identifier: Apache-2.0

// The library's version, and the versions of the on-disk formats it reads
// and writes: what a program linking libkcache reports, and what tells
// whether a cache or snapshot file made by one build opens in another.
//
// Thread-safety: GetLibraryVersion is thread-safe; its answer is a value.

#ifndef KCACHE_VERSION_H_
#define KCACHE_VERSION_H_

#include "kcache/export.h"

namespace kcache {

struct KCACHE_EXPORT LibraryVersion {
  // The library's release ("0.1.0"), also in its file name
  // (libkcache.so.0.1.0; soname libkcache.so.0.1). Static storage.
  const char* version = "";
  // The cache format (docs/storage-format.md) a writer records, and the
  // oldest it opens. A writer upgrades an older cache in place; a newer one
  // is refused (Unimplemented).
  int cache_format = 0;
  int oldest_cache_format = 0;
  // The snapshot file format (docs/snapshot-format.md) written and read.
  int snapshot_format = 0;
};

KCACHE_EXPORT LibraryVersion GetLibraryVersion();

}  // namespace kcache

#endif  // KCACHE_VERSION_H_
