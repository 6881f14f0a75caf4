// SPDX-License-Identifier: Apache-2.0

#ifndef KCACHE_SRC_PERSIST_PRIVATE_FILES_H_
#define KCACHE_SRC_PERSIST_PRIVATE_FILES_H_

#include <rocksdb/env.h>

#include <string>

namespace kcache::storage {

// The Env every cache's database uses: the default one, except that the files
// and directories RocksDB creates are 0600 and 0700 whatever the umask (its
// own default is 0644 and 0755). A cache may hold Secrets. Lives as long as
// the process; thread-safe as RocksDB's default Env is.
rocksdb::Env* PrivateEnv();

// Takes group and other access away from each regular file directly in `dir`,
// so that a cache written by an older kcache (0644 tables) becomes private
// when a writer opens it. Errors are ignored: a file it cannot change is one
// it does not own, and opening the cache reports what matters.
void MakeFilesPrivate(const std::string& dir);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_PRIVATE_FILES_H_
