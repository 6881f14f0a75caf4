// SPDX-License-Identifier: Apache-2.0

// A cache's directory through its life: what a directory named as a cache
// holds; a new cache built out of sight in a working directory and
// installed at its place at once (in an absent directory or an empty one, a
// mount point included); kcache's working directories and how what a
// killed process left there is told apart from what a live one is still
// building; and fsync of directories, which makes each step durable.

#ifndef KCACHE_SRC_PERSIST_CACHE_DIR_H_
#define KCACHE_SRC_PERSIST_CACHE_DIR_H_

#include <memory>
#include <string>
#include <string_view>

#include "kcache/status_or.h"

namespace kcache::storage {

// fsyncs directory `dir`, so that the entries made or renamed in it last.
Status SyncDir(const std::string& dir);

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

// What a directory named as a cache holds.
enum class DirState {
  kAbsent,
  // Nothing, or only what kcache ignores there: "lost+found" (a file
  // system's root has one), kcache's working entries, and what an
  // installation killed before its end left.
  kEmpty,
  kCache,    // a CURRENT file: a database, whole or damaged
  kForeign,  // anything else, left untouched
};

// Classifies `dir`; for kForeign, `why` says what is wrong and the way out.
DirState InspectDir(const std::string& dir, std::string* why);

// Builds a database in a private directory and installs it at `target`.
//
// An absent target gets the whole directory, renamed into place. An empty
// target (one made for the cache, or a mount point, which no rename can
// replace) gets the database's files moved into it: first a marker file
// naming them, then every file but CURRENT, then CURRENT, the step that
// makes it a database, then the marker goes. A process killed at any
// instant leaves either no database there or a whole one; what it left is
// removed by the next site at that target (the marker names the files to
// remove). Sites at one existing target take turns (flock on the target).
// Not thread-safe; owned by one user.
class NewDbSite {
 public:
  // `purpose` names the working directory (".NAME.PURPOSE-PID-XXXXXX").
  // FailedPrecondition if `target` is neither absent nor empty; AlreadyExists
  // if it holds a cache.
  static StatusOr<std::unique_ptr<NewDbSite>> Prepare(const std::string& target,
                                                      std::string_view purpose);
  ~NewDbSite();
  NewDbSite(const NewDbSite&) = delete;
  NewDbSite& operator=(const NewDbSite&) = delete;

  // A private directory for whatever the build needs; removed with the site.
  const std::string& work_dir() const { return work_->path(); }
  // Where to build the database (not created yet).
  std::string db_dir() const { return work_->path() + "/db"; }
  // Installs the closed database in db_dir() at the target. AlreadyExists
  // if another process installed one there first.
  Status Install();

 private:
  NewDbSite(std::string target, int lock_fd, std::unique_ptr<WorkDir> work)
      : target_(std::move(target)), lock_fd_(lock_fd), work_(std::move(work)) {}

  Status InstallInto();

  const std::string target_;
  const int lock_fd_;  // on an existing target; -1 for an absent one
  std::unique_ptr<WorkDir> work_;
};

// Removes from cache directory `dir` what dead processes left there: the
// marker of an installation killed after its CURRENT file was in place,
// and working directories (RemoveDeadWorkDirs). Best effort; a writer's
// open calls it.
void TidyCacheDir(const std::string& dir);

}  // namespace kcache::storage

#endif  // KCACHE_SRC_PERSIST_CACHE_DIR_H_
