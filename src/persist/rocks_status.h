// SPDX-License-Identifier: Apache-2.0

// The one place where RocksDB statuses become kcache statuses.

#ifndef KCACHE_SRC_PERSIST_ROCKS_STATUS_H_
#define KCACHE_SRC_PERSIST_ROCKS_STATUS_H_

#include <rocksdb/slice.h>
#include <rocksdb/status.h>

#include <string_view>

#include "kcache/status.h"

namespace kcache::storage {

// `context` names what was being done ("open /var/cache/kc", "write pods").
// A held LOCK file becomes Busy; corruption Corruption; I/O errors IOError.
Status FromRocks(const rocksdb::Status& s, std::string_view context);

inline std::string_view View(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_ROCKS_STATUS_H_
