// SPDX-License-Identifier: Apache-2.0

#include "persist/rocks_status.h"

#include <string>

namespace kcache::storage {

Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return Status::OK();
  std::string text = s.ToString();
  // RocksDB's wording: "Corruption: Corruption: ..." where one status wraps
  // another, and a missing table file by its legacy name (it looks for
  // NNNNNN.sst, then NNNNNN.ldb, and reports the last).
  if (const size_t colon = text.find(": "); colon != std::string::npos) {
    const std::string code = text.substr(0, colon + 2);
    while (text.compare(code.size(), code.size(), code) == 0) text.erase(0, code.size());
  }
  for (size_t at = text.find(".ldb"); at != std::string::npos; at = text.find(".ldb", at)) {
    text.replace(at, 4, ".sst");
  }
  std::string msg = std::string(context) + ": " + text;
  // RocksDB reports a LOCK file held by another process as an IOError whose
  // text names the lock.
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Status::Busy(std::string(context) +
                        ": the cache is in use by another process (its LOCK file is held)");
  }
  if (s.IsBusy() || s.IsTryAgain()) return Status::Busy(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotSupported()) return Status::Unimplemented(msg);
  if (s.IsIOError()) return Status::IOError(msg);
  return Status::Internal(msg);
}

}  // namespace kcache::storage
