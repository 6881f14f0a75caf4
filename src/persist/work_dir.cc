#include "persist/work_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "persist/snapshot_format.h"

namespace kcache::storage {
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

}  // namespace kcache::storage
