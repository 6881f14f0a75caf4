// SPDX-License-Identifier: Apache-2.0

// SIGKILLs of the commands that read a cache or make one from it, while a
// sync writes it under churn: `snapshot export`, `snapshot import`,
// `snapshot create`, `serve --cache` and `get -A -o json`, KCACHE_KILLS times
// in all (default 100, one kind after another, each at a random moment).
//
// After every kill: what the killed command was making is absent or whole (a
// snapshot file that verifies, a cache that opens and passes Verify), and
// the cache being synced opens and passes Verify. At the end, one more run
// of each kind succeeds and removes what the killed ones left: no working
// directory or file of a dead process is left, beside the targets, in the
// cache, or in $TMPDIR (docs/reliability.md, "Dead runs' working
// directories").
//
//   KCACHE_KILLS=1000 KCACHE_BIN=build/tools/kcache/kcache build/tests/reader_kill_test

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kcache/cache.h"
#include "kcache/snapshot.h"
#include "persist/cache_dir.h"
#include "testing/command.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

namespace fs = std::filesystem;

int Kills() {
  const char* n = std::getenv("KCACHE_KILLS");
  return n && *n ? std::atoi(n) : 100;
}

// Kcache's working entries in `dir` (storage::IsWorkDirName).
std::vector<std::string> Leftovers(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    long pid = 0;
    const std::string name = it->path().filename().string();
    if (storage::IsWorkDirName(name, &pid) || name.rfind(".kcache.", 0) == 0) out.push_back(name);
  }
  return out;
}

TEST(ReaderKillTest, KilledReadersAndCopiesLeaveNothingHalfMadeAndNoLeftovers) {
  TempDir dir;
  const std::string tmp = dir.Sub("tmp");  // the readers' $TMPDIR
  fs::create_directory(tmp);
  const std::string env = "env TMPDIR=" + tmp + " ";
  const std::string cache = dir.Sub("cache");
  const std::string out = dir.Sub("out");
  fs::create_directory(out);

  ServeProcess server = StartServe(
      "--listen 127.0.0.1:0 --pods 3000 --namespaces 4 --nodes 10 "
      "--creates 20 --updates 100 --relabels 20 --deletes 20 --seed 9");
  ASSERT_FALSE(server.url.empty()) << server.banner;
  Background sync =
      StartCommand(KcacheBin() + " sync pods --server " + server.url + " --cache " + cache);
  // Synced once, so that every reader has a cache to read.
  for (int i = 0; i < 300 && !fs::exists(cache + "/CURRENT"); ++i) usleep(50'000);
  usleep(2'000'000);
  ASSERT_EQ(RunCommand(KcacheBin() + " snapshot export --cache " + cache + " " + out + "/base.kcs")
                .exit_code,
            0);

  struct Kind {
    const char* name;
    std::string command;  // %d is the round
    std::string target;   // what it makes; "" if nothing
  };
  auto at = [&](const std::string& what, int round) {
    return out + "/" + what + std::to_string(round);
  };
  std::mt19937 rng(13);
  const int kills = Kills();
  int whole = 0;
  for (int round = 0; round < kills; ++round) {
    const int kind = round % 5;
    std::string command, target;
    switch (kind) {
      case 0:
        target = at("export", round) + ".kcs";
        command = "snapshot export --cache " + cache + " " + target;
        break;
      case 1:
        target = at("import", round);
        command = "snapshot import --cache " + target + " " + out + "/base.kcs";
        break;
      case 2:
        target = at("create", round);
        command = "snapshot create --cache " + cache + " " + target;
        break;
      case 3:
        command = "serve --cache " + cache + " --listen 127.0.0.1:0";
        break;
      case 4:
        command = "get pods -A -o json --cache " + cache;
        break;
    }
    SCOPED_TRACE("round " + std::to_string(round) + ": kcache " + command);
    Background b = StartCommand(env + KcacheBin() + " " + command + " >/dev/null");
    usleep(std::uniform_int_distribution<useconds_t>(0, 400'000)(rng));
    kill(b.pid, SIGKILL);
    int status = 0;
    waitpid(b.pid, &status, 0);
    Drain(b.out);
    if (WIFEXITED(status)) ++whole;

    if (kind == 0 && fs::exists(target)) {
      EXPECT_OK(VerifySnapshot(target));
    } else if ((kind == 1 || kind == 2) && fs::exists(target + "/CURRENT")) {
      auto made = Cache::OpenReadOnly(target);
      ASSERT_OK(made);
      EXPECT_OK((*made)->Verify());
    } else if (kind == 1 || kind == 2) {
      // Nothing, or only what a killed run leaves before its cache is in place.
      EXPECT_TRUE(!fs::exists(target) || fs::is_empty(target)) << target;
    }
    if (round % 10 == 9) {
      auto synced = Cache::OpenReadOnly(cache);
      ASSERT_OK(synced);
      EXPECT_OK((*synced)->Verify());
    }
  }
  EXPECT_LT(whole, kills) << "some kills came before the end";

  // One more run of each kind, whole; each removes what the killed ones left.
  for (const std::string& command :
       {"snapshot export --cache " + cache + " " + out + "/last.kcs",
        "snapshot import --cache " + out + "/last-import " + out + "/base.kcs",
        "snapshot create --cache " + cache + " " + out + "/last-create",
        "get pods -A -o name --cache " + cache}) {
    CommandResult r = RunCommand(env + KcacheBin() + " " + command + " 2>&1 >/dev/null");
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.output;
  }
  EXPECT_EQ(Leftovers(out), std::vector<std::string>{});
  EXPECT_EQ(Leftovers(tmp), std::vector<std::string>{});
  EXPECT_EQ(Stop(sync, SIGTERM), 0);
  auto synced = Cache::Open(cache);
  ASSERT_OK(synced);
  EXPECT_OK((*synced)->Verify());
  EXPECT_EQ(Leftovers(cache), std::vector<std::string>{});
  Stop(server.process, SIGTERM);
}

}  // namespace
}  // namespace kcache::testing
