// SPDX-License-Identifier: Apache-2.0

// RocksDB's info log (the LOG file of a cache), written by kcache.
//
// librocksdb 7.8's own logger asserts, aborting the process, on the next
// line after a write to its file failed, as happens on a full disk. This
// one drops the lines it cannot write: the log is for diagnosis, and a
// library must never abort its host.

#ifndef KCACHE_SRC_PERSIST_INFO_LOG_H_
#define KCACHE_SRC_PERSIST_INFO_LOG_H_

#include <rocksdb/env.h>

#include <memory>
#include <string>

#include "kcache/status_or.h"

namespace kcache::storage {

// A logger appending to DIR/LOG at INFO level and above. Past `max_bytes`
// the file moves to LOG.old (replacing an older one) and a new LOG starts.
// Thread-safe.
StatusOr<std::shared_ptr<rocksdb::Logger>> NewInfoLog(const std::string& dir,
                                                      size_t max_bytes = 4 << 20);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_INFO_LOG_H_
