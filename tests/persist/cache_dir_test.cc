// SPDX-License-Identifier: Apache-2.0

// persist/cache_dir.h: a cache directory through its life.
//
// A new cache, imported snapshot or checkpoint in an absent directory, an
// empty one, or a mount point: installed at once, whatever instant a
// process is killed at (docs/reliability.md, "A cache on a mounted volume").
//
// Working directories: locked while their process lives, removed by the
// next process that works beside them once it is dead, whatever target
// they were for (docs/reliability.md, "Dead runs' working directories").

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kcache/cache.h"
#include "kcache/snapshot.h"
#include "persist/cache_dir.h"
#include "persist/snapshot_format.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::MakePodCache;
using testing::Pod;
using testing::TempDir;

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

size_t PodCount(const std::string& dir) {
  auto cache = Cache::Open(dir);
  EXPECT_OK(cache);
  if (!cache.ok()) return 0;
  EXPECT_OK((*cache)->Verify());
  auto pods = (*cache)->OpenKeyspace("pods");
  EXPECT_OK(pods);
  auto all = (*pods)->List();
  EXPECT_OK(all);
  return all.ok() ? all->size() : 0;
}

TEST(NewDbTest, ACacheIsCreatedInsideAnEmptyDirectoryWhichKeepsItsMode) {
  TempDir tmp;
  const std::string dir = tmp.Sub("made-by-the-user");
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0750);
  fs::create_directory(dir + "/lost+found");  // as at a file system's root
  MakePodCache(dir, 10);
  EXPECT_EQ(PodCount(dir), 10u);
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  for (const std::string& name : Names(dir)) {
    EXPECT_EQ(name.find(".kcache."), std::string::npos) << name;
  }
  // Nothing was made beside it.
  EXPECT_EQ(Names(tmp.path()), std::set<std::string>{"made-by-the-user"});
}

TEST(NewDbTest, ADirectoryHoldingAnythingElseIsRefusedAndLeftAsItIs) {
  TempDir tmp;
  fs::create_directory(tmp.Sub("d"));
  std::ofstream(tmp.Sub("d/notes")) << "mine";
  auto cache = Cache::Open(tmp.Sub("d"));
  EXPECT_EQ(cache.status().code(), StatusCode::kFailedPrecondition) << cache.status();
  EXPECT_EQ(Names(tmp.Sub("d")), std::set<std::string>{"notes"});
}

// Simulates an installation into `target` killed after it moved the first
// `moved` files of the database at `built` (CURRENT last).
void KilledInstall(const std::string& built, const std::string& target, size_t moved) {
  std::vector<std::string> names;
  for (const std::string& n : Names(built)) {
    if (n != "CURRENT" && n != "LOCK") names.push_back(n);
  }
  std::ofstream marker(target + "/.kcache.installing");
  for (const std::string& n : names) marker << n << "\n";
  marker.close();
  names.push_back("CURRENT");
  for (size_t i = 0; i < moved && i < names.size(); ++i) {
    fs::rename(built + "/" + names[i], target + "/" + names[i]);
  }
}

// A dead process's pid: a child that has exited and been reaped.
pid_t DeadPid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

TEST(NewDbTest, AnInstallationKilledBeforeItsCurrentFileLeavesNoCacheAndNoTrace) {
  TempDir tmp;
  MakePodCache(tmp.Sub("built"), 50);
  const size_t files = Names(tmp.Sub("built")).size() - 1;  // but LOCK
  for (size_t moved : {size_t{0}, size_t{2}, files - 1}) {
    SCOPED_TRACE("files moved: " + std::to_string(moved));
    fs::remove_all(tmp.Sub("copy"));
    fs::copy(tmp.Sub("built"), tmp.Sub("copy"));
    const std::string target = tmp.Sub("t" + std::to_string(moved));
    fs::create_directory(target);
    KilledInstall(tmp.Sub("copy"), target, moved);
    const std::string dead_work =
        target + "/.kcache.creating-" + std::to_string(DeadPid()) + "-abcdef";
    fs::create_directory(dead_work);

    auto reader = Cache::OpenReadOnly(target);
    EXPECT_EQ(reader.status().code(), StatusCode::kNotFound) << reader.status();
    EXPECT_EQ(PodCount(target), 0u);
    for (const std::string& name : Names(target)) {
      EXPECT_EQ(name.find(".kcache."), std::string::npos) << name;
    }
  }
}

TEST(NewDbTest, AnInstallationKilledAfterItsCurrentFileIsAWholeCache) {
  TempDir tmp;
  MakePodCache(tmp.Sub("built"), 50);
  const std::string target = tmp.Sub("t");
  fs::create_directory(target);
  KilledInstall(tmp.Sub("built"), target, 1000);
  EXPECT_EQ(PodCount(target), 50u);
  EXPECT_FALSE(fs::exists(target + "/.kcache.installing"));
}

// Creating a cache is atomic: a process killed at any instant of it leaves
// no cache or a whole one, and the next open succeeds (before the cache was
// built out of sight, a kill in its first fraction of a second left
// "column family 'rindex' is missing" forever). Even rounds create at an
// absent directory, odd ones inside an existing empty one. Working
// directories of the killed creators are removed.
TEST(NewDbTest, KillsWhileCreatingACacheNeverLeaveItUnusable) {
  TempDir tmp;
  std::mt19937 rng(7);
  int whole = 0;
  for (int round = 0; round < 40; ++round) {
    const std::string path = tmp.Sub("c" + std::to_string(round));
    if (round % 2 == 1) fs::create_directory(path);
    pid_t child = fork();
    if (child == 0) _exit(Cache::Open(path).ok() ? 0 : 1);
    usleep(std::uniform_int_distribution<useconds_t>(0, 60000)(rng));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFEXITED(status)) ++whole;
    auto reopened = Cache::Open(path);
    ASSERT_OK(reopened) << "round " << round << ": " << reopened.status();
    EXPECT_OK((*reopened)->Verify());
    auto pods = (*reopened)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    EXPECT_OK((*pods)->Add(Pod("p", "ns", "1")));
    for (const std::string& name : Names(path)) {
      EXPECT_EQ(name.find(".kcache."), std::string::npos) << "round " << round << ": " << name;
    }
  }
  // Some kills came after the creation, most during it.
  EXPECT_LT(whole, 40);
  for (const std::string& name : Names(tmp.path())) {
    EXPECT_EQ(name.find(".creating-"), std::string::npos) << name;
  }
}

// A mount point cannot be renamed over: before, creating a cache there
// failed with "Device or resource busy". Needs root (CAP_SYS_ADMIN) to
// mount a tmpfs, as .ci/run has.
class MountPointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
    for (const char* name : {"cache", "import", "checkpoint"}) {
      const std::string m = tmp_.Sub(name);
      fs::create_directory(m);
      ASSERT_EQ(::mount("tmpfs", m.c_str(), "tmpfs", 0, "size=64m,mode=0700"), 0)
          << "mount a tmpfs at " << m << ": " << std::strerror(errno);
      mounts_.push_back(m);
    }
  }
  void TearDown() override {
    for (const std::string& m : mounts_) ::umount2(m.c_str(), MNT_DETACH);
  }

  TempDir tmp_;
  std::vector<std::string> mounts_;
};

TEST_F(MountPointTest, CachesSnapshotsAndCheckpointsAreMadeOnMountPoints) {
  MakePodCache(tmp_.Sub("cache"), 100);
  EXPECT_EQ(PodCount(tmp_.Sub("cache")), 100u);
  {
    auto cache = Cache::Open(tmp_.Sub("cache"));
    ASSERT_OK(cache);
    ASSERT_OK(ExportSnapshot(**cache, tmp_.Sub("s.kcs")));
    ASSERT_OK((*cache)->Checkpoint(tmp_.Sub("checkpoint")));
    auto again = (*cache)->Checkpoint(tmp_.Sub("checkpoint"));
    EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again;
  }
  ASSERT_OK(ImportSnapshot(tmp_.Sub("s.kcs"), tmp_.Sub("import")));
  EXPECT_EQ(PodCount(tmp_.Sub("import")), 100u);
  EXPECT_EQ(PodCount(tmp_.Sub("checkpoint")), 100u);
  auto over = ImportSnapshot(tmp_.Sub("s.kcs"), tmp_.Sub("import"));
  EXPECT_EQ(over.status().code(), StatusCode::kAlreadyExists) << over.status();
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("not an empty directory"));
  // Nothing was made beside the mount points.
  EXPECT_EQ(Names(tmp_.path()), (std::set<std::string>{"cache", "checkpoint", "import", "s.kcs"}));
}

}  // namespace
}  // namespace kcache

namespace kcache::storage {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

pid_t DeadPid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

TEST(WorkDirTest, TellsItsNamesApart) {
  long pid = 0;
  EXPECT_TRUE(IsWorkDirName(".cache.creating-123-abcDEF", &pid));
  EXPECT_EQ(pid, 123);
  EXPECT_TRUE(IsWorkDirName(".s.kcs.partial-7-a1b2c3", &pid));
  EXPECT_TRUE(IsWorkDirName(".out.checkpoint-42-xxxxxx", &pid));
  EXPECT_TRUE(IsWorkDirName(".relist-9-xxxxxx", &pid));
  EXPECT_TRUE(IsWorkDirName(".kcache.creating-9-xxxxxx", &pid));
  EXPECT_TRUE(IsWorkDirName("kcache-reader-9-xxxxxx", &pid));
  EXPECT_TRUE(IsWorkDirName("backup.kcs.partial-4242", &pid));  // written before 2026-11-27
  EXPECT_EQ(pid, 4242);
  for (const char* other : {"notes", ".cache.creating-x-abcdef", ".cache.creating-1-abc",
                            ".cache.copying-1-abcdef", "my-kcache-reader-1-abcdef",
                            "backup.kcs.partial-", "x.partial-1-", ".cache.creating--abcdef"}) {
    EXPECT_FALSE(IsWorkDirName(other, &pid)) << other;
  }
}

TEST(WorkDirTest, AWorkDirIsPrivateAndLockedWhileItLivesAndGoneAfter) {
  TempDir tmp;
  std::string path;
  {
    auto work = WorkDir::Create(tmp.path(), ".t.partial-");
    ASSERT_OK(work);
    path = (*work)->path();
    std::ofstream(path + "/file") << "x";
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_all);
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);
    EXPECT_EQ(errno, EWOULDBLOCK);
    ::close(fd);
  }
  EXPECT_FALSE(fs::exists(path));
}

// Before, each command removed only the leftovers of dead runs for the
// same target: 60 killed exports, imports and checkpoints of other names
// left 301 MB.
TEST(WorkDirTest, DeadProcessesWorkDirsAreRemovedWhateverTheirTarget) {
  TempDir tmp;
  const std::string dead = std::to_string(DeadPid());
  const std::string live = std::to_string(::getpid());
  const std::set<std::string> gone = {
      ".a.partial-" + dead + "-abcdef", ".b.checkpoint-" + dead + "-abcdef",
      ".c.creating-" + dead + "-abcdef", ".relist-" + dead + "-x1y2z3", "d.kcs.partial-" + dead};
  const std::set<std::string> kept = {
      ".e.partial-" + live + "-abcdef",   // its process lives
      ".f.creating-" + dead + "-lockd1",  // its lock is held (another machine's)
      "notes.partial-x",
      ".g.partial-" + dead + "-abc",
      "h.kcs",
      "report.partial-" + dead};  // the legacy form, but no snapshot's start
  for (const std::string& n : gone) {
    if (n[0] == '.') {
      fs::create_directory(tmp.Sub(n));
      std::ofstream(tmp.Sub(n) + "/table.sst") << "rows";
    } else {
      std::ofstream(tmp.Sub(n)) << std::string(snapshot::kMagic, sizeof snapshot::kMagic) << "rows";
    }
  }
  for (const std::string& n : kept) {
    if (n[0] == '.') {
      fs::create_directory(tmp.Sub(n));
    } else {
      std::ofstream(tmp.Sub(n)) << "mine";
    }
  }
  const int lock = ::open(tmp.Sub(".f.creating-" + dead + "-lockd1").c_str(), O_RDONLY);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);

  auto work = WorkDir::Create(tmp.path(), ".i.partial-");
  ASSERT_OK(work);
  ::close(lock);
  std::set<std::string> now;
  for (const auto& e : fs::directory_iterator(tmp.path())) now.insert(e.path().filename().string());
  std::set<std::string> want = kept;
  want.insert(fs::path((*work)->path()).filename().string());
  EXPECT_EQ(now, want);
}

}  // namespace
}  // namespace kcache::storage
