// Working directories: where kcache builds something out of sight before it
// appears at its place, and how what a killed process left there is told
// apart from what a live one is still building.

#ifndef KCACHE_SRC_PERSIST_WORK_DIR_H_
#define KCACHE_SRC_PERSIST_WORK_DIR_H_

#include <memory>
#include <string>
#include <string_view>

#include "kcache/status_or.h"

namespace kcache::storage {

// A private (0700) directory PARENT/PREFIX + PID + "-XXXXXX". Its process
// holds an exclusive flock(2) on it for as long as the WorkDir lives, and
// the destructor removes it with what it holds (whatever was moved out of it
// is not affected). Not thread-safe; owned by one user.
class WorkDir {
 public:
  // Creates PARENT (if needed) and the directory, after removing the
  // working directories in PARENT that dead processes left
  // (RemoveDeadWorkDirs). `prefix` ends with one of the purposes that
  // IsWorkDirName recognises.
  static StatusOr<std::unique_ptr<WorkDir>> Create(const std::string& parent,
                                                   const std::string& prefix);
  // One beside `target`: ".NAME.PURPOSE-PID-XXXXXX" in target's parent.
  static StatusOr<std::unique_ptr<WorkDir>> Beside(const std::string& target,
                                                   std::string_view purpose);

  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  WorkDir(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  const std::string path_;
  const int fd_;  // holds the lock
};

// Whether `name` is one of kcache's working names, and if so its creator's
// pid: "[.NAME].PURPOSE-PID-XXXXXX" for the purposes creating, partial,
// checkpoint and relist, "kcache-reader-PID-XXXXXX", and the snapshot
// files "NAME.partial-PID" that versions before 2026-11-27 wrote.
bool IsWorkDirName(std::string_view name, long* pid);

// Removes every working directory or file in `dir` whose creator is dead:
// its pid names no process on this machine and nobody holds its lock (so a
// live process on another machine sharing the filesystem keeps its own).
// Best effort: what cannot be removed stays.
void RemoveDeadWorkDirs(const std::string& dir);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_WORK_DIR_H_
