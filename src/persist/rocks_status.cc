#include "persist/rocks_status.h"

#include <string>

namespace kcache::storage {

Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return Status::OK();
  std::string msg = std::string(context) + ": " + s.ToString();
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
