// SPDX-License-Identifier: Apache-2.0

#include "persist/private_files.h"

#include <rocksdb/file_system.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

namespace kcache::storage {
namespace {

// Makes `path` exist as a private file before RocksDB opens it, so that the
// file is never open to others, not even for the instant between RocksDB's
// open (0644 less the umask) and a chmod after it. A file that exists keeps
// its contents; its mode loses group and other access.
void CreatePrivate(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;  // RocksDB's own open reports the error
  struct stat st;
  if (::fstat(fd, &st) == 0 && (st.st_mode & 077) != 0) ::fchmod(fd, st.st_mode & 0700);
  ::close(fd);
}

class PrivateFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  explicit PrivateFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target)
      : rocksdb::FileSystemWrapper(target) {}

  const char* Name() const override { return "KcachePrivateFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    CreatePrivate(f);
    return target()->NewWritableFile(f, o, r, dbg);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override {
    CreatePrivate(f);
    return target()->ReopenWritableFile(f, o, r, dbg);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override {
    CreatePrivate(old);
    return target()->ReuseWritableFile(f, old, o, r, dbg);
  }
  rocksdb::IOStatus NewRandomRWFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    CreatePrivate(f);
    return target()->NewRandomRWFile(f, o, r, dbg);
  }
  rocksdb::IOStatus NewLogger(const std::string& f, const rocksdb::IOOptions& o,
                              std::shared_ptr<rocksdb::Logger>* r,
                              rocksdb::IODebugContext* dbg) override {
    CreatePrivate(f);
    return target()->NewLogger(f, o, r, dbg);
  }
  rocksdb::IOStatus LockFile(const std::string& f, const rocksdb::IOOptions& o,
                             rocksdb::FileLock** l, rocksdb::IODebugContext* dbg) override {
    CreatePrivate(f);
    return target()->LockFile(f, o, l, dbg);
  }
  rocksdb::IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& o,
                              rocksdb::IODebugContext* dbg) override {
    if (::mkdir(d.c_str(), 0700) == 0) return rocksdb::IOStatus::OK();
    return target()->CreateDir(d, o, dbg);  // says why, as RocksDB does
  }
  rocksdb::IOStatus CreateDirIfMissing(const std::string& d, const rocksdb::IOOptions& o,
                                       rocksdb::IODebugContext* dbg) override {
    ::mkdir(d.c_str(), 0700);  // EEXIST, or an error the target reports
    return target()->CreateDirIfMissing(d, o, dbg);
  }
};

}  // namespace

rocksdb::Env* PrivateEnv() {
  // Never destroyed, as RocksDB's default Env is not: databases closed in
  // static destructors may still use it.
  static rocksdb::Env* const env =
      rocksdb::NewCompositeEnv(std::make_shared<PrivateFileSystem>(rocksdb::FileSystem::Default()))
          .release();
  return env;
}

void MakeFilesPrivate(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const fs::file_status st = e.symlink_status(ec);
    constexpr fs::perms kOthers = fs::perms::group_all | fs::perms::others_all;
    if (!ec && fs::is_regular_file(st) && (st.permissions() & kOthers) != fs::perms::none) {
      fs::permissions(e.path(), kOthers, fs::perm_options::remove, ec);
    }
  }
}

}  // namespace kcache::storage
