// SPDX-License-Identifier: Apache-2.0

#include "persist/cache_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "persist/snapshot_format.h"

namespace kcache::storage {

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("open " + dir + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::IOError("fsync " + dir + ": " + std::strerror(errno));
  return Status::OK();
}

namespace {

namespace fs = std::filesystem;

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool EndsWith(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.substr(s.size() - end.size()) == end;
}

// Whether the process that made working entry `path`, pid `pid`, is gone:
// no such process here, and no lock held on the entry.
bool CreatorIsDead(const std::string& path, long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) return false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool unlocked = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return unlocked;
}

// The snapshot files exports wrote before 2026-11-27: "NAME.partial-PID".
bool IsLegacyPartial(std::string_view name, long* pid) {
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos) return false;
  const std::string_view tail = name.substr(dash + 1);
  if (!AllDigits(tail) || !EndsWith(name.substr(0, dash), ".partial")) return false;
  *pid = std::strtol(std::string(tail).c_str(), nullptr, 10);
  return *pid > 0;
}

bool IsSnapshotStart(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof snapshot::kMagic];
  return in.read(magic, sizeof magic) && std::memcmp(magic, snapshot::kMagic, sizeof magic) == 0;
}

}  // namespace

bool IsWorkDirName(std::string_view name, long* pid) {
  if (IsLegacyPartial(name, pid)) return true;
  // "...PURPOSE-PID-XXXXXX".
  if (name.size() < 9 || name[name.size() - 7] != '-') return false;
  std::string_view rest = name.substr(0, name.size() - 7);
  const size_t dash = rest.rfind('-');
  if (dash == std::string_view::npos || !AllDigits(rest.substr(dash + 1))) return false;
  const std::string_view purpose = rest.substr(0, dash);
  bool known = EndsWith(purpose, "kcache-reader") && purpose.size() == 13;
  for (std::string_view p : {".creating", ".partial", ".checkpoint", ".relist"}) {
    known = known || EndsWith(purpose, p);
  }
  if (!known) return false;
  *pid = std::strtol(std::string(rest.substr(dash + 1)).c_str(), nullptr, 10);
  return *pid > 0;
}

void RemoveDeadWorkDirs(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    long pid = 0;
    const std::string name = it->path().filename().string();
    if (!IsWorkDirName(name, &pid)) continue;
    // A file of the legacy form must be a snapshot's beginning too: the
    // name alone could be a user's.
    if (long p = 0; IsLegacyPartial(name, &p) && !IsSnapshotStart(it->path().string())) continue;
    if (CreatorIsDead(it->path().string(), pid)) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

StatusOr<std::unique_ptr<WorkDir>> WorkDir::Create(const std::string& parent,
                                                   const std::string& prefix) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Status::IOError("create " + parent + ": " + ec.message());
  RemoveDeadWorkDirs(parent);
  std::string path =
      (fs::path(parent) / (prefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(path.data())) {
    return Status::IOError("create a working directory in " + parent + ": " + std::strerror(errno));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    fs::remove_all(path, ec);
    return Status::IOError("lock " + path + ": " + why);
  }
  return std::unique_ptr<WorkDir>(new WorkDir(std::move(path), fd));
}

StatusOr<std::unique_ptr<WorkDir>> WorkDir::Beside(const std::string& target,
                                                   std::string_view purpose) {
  std::error_code ec;
  fs::path t = fs::absolute(target, ec).lexically_normal();
  if (ec) return Status::InvalidArgument("bad path " + target + ": " + ec.message());
  if (t.filename().empty()) t = t.parent_path();
  return Create(t.parent_path().string(),
                "." + t.filename().string() + "." + std::string(purpose) + "-");
}

WorkDir::~WorkDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
  ::close(fd_);  // the lock goes after the files
}

namespace {

namespace fs = std::filesystem;

// In a target being installed into: the names of the files moved there,
// one per line, for as long as CURRENT is not.
constexpr char kMarker[] = ".kcache.installing";
constexpr char kMarkerTmp[] = ".kcache.installing.tmp";

// Files RocksDB writes besides CURRENT: their presence without CURRENT is a
// damaged database, not a place for a new one.
bool IsDatabaseFile(const std::string& name) {
  auto ends = [&](std::string_view s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return name.rfind("MANIFEST-", 0) == 0 || name.rfind("OPTIONS-", 0) == 0 || name == "IDENTITY" ||
         ends(".sst") || ends(".log") || ends(".blob");
}

// The names an unfinished installation into `dir` moved there (none if it
// left no marker).
std::set<std::string> InstalledNames(const std::string& dir) {
  std::set<std::string> names;
  std::ifstream in(dir + "/" + kMarker);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.find('/') == std::string::npos && line != "." && line != "..") {
      names.insert(line);
    }
  }
  return names;
}

// Removes what an installation into `dir` that never placed CURRENT moved
// there. REQUIRES: the target's lock held, and no CURRENT in `dir`.
void UndoInstall(const std::string& dir) {
  std::error_code ec;
  for (const std::string& name : InstalledNames(dir)) fs::remove(fs::path(dir) / name, ec);
  fs::remove(fs::path(dir) / kMarker, ec);
  fs::remove(fs::path(dir) / kMarkerTmp, ec);
  SyncDir(dir).IgnoreError();
}

Status WriteMarker(const std::string& dir, const std::vector<std::string>& names) {
  const std::string tmp = dir + "/" + kMarkerTmp;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError("create " + tmp + ": " + std::strerror(errno));
  std::string text;
  for (const std::string& n : names) text += n + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ok && ::fsync(fd) == 0;
  const std::string why = std::strerror(errno);
  ::close(fd);
  if (!ok) return Status::IOError("write " + tmp + ": " + why);
  std::error_code ec;
  fs::rename(tmp, dir + "/" + kMarker, ec);
  if (ec) return Status::IOError("rename " + tmp + ": " + ec.message());
  return SyncDir(dir);
}

}  // namespace

DirState InspectDir(const std::string& dir, std::string* why) {
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return DirState::kAbsent;
  if (!fs::is_directory(st)) {
    *why = "it is not a directory";
    return DirState::kForeign;
  }
  if (fs::exists(fs::path(dir) / "CURRENT", ec)) return DirState::kCache;
  const std::set<std::string> installed = InstalledNames(dir);
  std::vector<std::string> db_files, other;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == "lost+found" || name.rfind(".kcache.", 0) == 0 || installed.count(name)) continue;
    (IsDatabaseFile(name) ? db_files : other).push_back(std::move(name));
  }
  if (ec) {
    *why = "cannot list it: " + ec.message();
    return DirState::kForeign;
  }
  if (db_files.empty() && other.empty()) return DirState::kEmpty;
  std::sort(db_files.begin(), db_files.end());
  std::sort(other.begin(), other.end());
  if (!db_files.empty()) {
    *why = "it holds database files (" + db_files.front() +
           (db_files.size() > 1 ? " and " + std::to_string(db_files.size() - 1) + " more" : "") +
           ") but no CURRENT file, so it is a damaged cache, not a new one; kcache leaves it as "
           "it is: restore the cache from a snapshot (kcache snapshot import) into a new "
           "directory, or remove this one to start again";
  } else {
    *why = "it is not empty (" + other.front() +
           (other.size() > 1 ? " and " + std::to_string(other.size() - 1) + " more" : "") +
           ") and holds no cache; name a new or empty directory";
  }
  return DirState::kForeign;
}

StatusOr<std::unique_ptr<NewDbSite>> NewDbSite::Prepare(const std::string& target,
                                                        std::string_view purpose) {
  std::string why;
  switch (InspectDir(target, &why)) {
    case DirState::kForeign:
      return Status::FailedPrecondition(why);
    case DirState::kCache:
      return Status::AlreadyExists("it holds a cache");
    case DirState::kAbsent: {
      KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<WorkDir> work, WorkDir::Beside(target, purpose));
      return std::unique_ptr<NewDbSite>(new NewDbSite(target, -1, std::move(work)));
    }
    case DirState::kEmpty:
      break;
  }
  const int fd = ::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    const std::string err = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Status::IOError("lock " + target + ": " + err);
  }
  // Under the lock no other site is at work here: a marker without CURRENT
  // is a dead one's.
  switch (InspectDir(target, &why)) {
    case DirState::kEmpty:
      break;
    case DirState::kCache:
      ::close(fd);
      return Status::AlreadyExists("it holds a cache");
    default:
      ::close(fd);
      return Status::FailedPrecondition(why.empty() ? "it was removed meanwhile" : why);
  }
  UndoInstall(target);
  StatusOr<std::unique_ptr<WorkDir>> work =
      WorkDir::Create(target, ".kcache." + std::string(purpose) + "-");
  if (!work.ok()) {
    ::close(fd);
    return work.status();
  }
  return std::unique_ptr<NewDbSite>(new NewDbSite(target, fd, *std::move(work)));
}

NewDbSite::~NewDbSite() {
  work_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status NewDbSite::Install() {
  const std::string db = db_dir();
  std::error_code ec;
  // RocksDB makes its directory 0755; a cache is private.
  fs::permissions(db, fs::perms::owner_all, ec);
  if (ec) return Status::IOError("chmod " + db + ": " + ec.message());
  if (lock_fd_ >= 0) return InstallInto();
  fs::rename(db, target_, ec);
  if (ec) {
    std::string why;
    if (InspectDir(target_, &why) == DirState::kCache) {
      return Status::AlreadyExists("another process made a cache there first");
    }
    return Status::IOError("rename " + db + " to " + target_ + ": " + ec.message());
  }
  const fs::path full = fs::absolute(target_, ec).lexically_normal();
  if (ec) return Status::IOError(ec.message());
  return SyncDir((full.filename().empty() ? full.parent_path() : full).parent_path().string());
}

Status NewDbSite::InstallInto() {
  const std::string db = db_dir();
  std::vector<std::string> names;
  std::error_code ec;
  bool has_current = false;
  for (fs::directory_iterator it(db, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "LOCK" || !it->is_regular_file()) continue;
    if (name == "CURRENT") {
      has_current = true;
    } else {
      names.push_back(name);
    }
  }
  if (ec) return Status::IOError("list " + db + ": " + ec.message());
  if (!has_current) return Status::Internal(db + " holds no database");
  KCACHE_RETURN_IF_ERROR(WriteMarker(target_, names));
  Status s;
  for (const std::string& name : names) {
    fs::rename(fs::path(db) / name, fs::path(target_) / name, ec);
    if (ec) {
      s = Status::IOError("move " + name + " from " + db + " to " + target_ + ": " + ec.message());
      break;
    }
  }
  if (s.ok()) s = SyncDir(target_);
  if (s.ok()) {
    fs::rename(fs::path(db) / "CURRENT", fs::path(target_) / "CURRENT", ec);
    if (ec) s = Status::IOError("move CURRENT from " + db + " to " + target_ + ": " + ec.message());
  }
  if (!s.ok()) {
    UndoInstall(target_);
    return s;
  }
  KCACHE_RETURN_IF_ERROR(SyncDir(target_));
  // Its working directory is still in the target: leave that to the
  // destructor.
  fs::remove(fs::path(target_) / kMarker, ec);
  if (!ec) SyncDir(target_).IgnoreError();
  return Status::OK();
}

void TidyCacheDir(const std::string& dir) {
  RemoveDeadWorkDirs(dir);
  std::error_code ec;
  if (!fs::exists(fs::path(dir) / kMarker, ec) || !fs::exists(fs::path(dir) / "CURRENT", ec)) {
    return;
  }
  fs::remove(fs::path(dir) / kMarker, ec);
  if (!ec) SyncDir(dir).IgnoreError();
}

}  // namespace kcache::storage
