// Working directories: locked while their process lives, removed by the
// next process that works beside them once it is dead, whatever target
// they were for (docs/reliability.md, "Dead runs' working directories").

#include "persist/work_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>

#include "persist/snapshot_format.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

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
