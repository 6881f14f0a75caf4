// SPDX-License-Identifier: Apache-2.0

// Crash consistency of `kcache sync` end to end, at scale: a sync of a
// churning `kcache serve` cluster is SIGKILLed at random moments, during its
// initial list, its steady watch, and relists (after pauses longer than the
// server's history, and 410s), and started
// again, KCACHE_KILLS times (default 100; the documented full run is 1,000).
// After every kill the cache must open, pass Verify (objects, index entries
// and counts agree: invariants 1 and 3), and, if it has a resume point R,
// hold exactly the server's objects at R (a LIST with resourceVersion R,
// resourceVersionMatch=Exact); with no resume point a relist was cut short
// and the next start lists again. The last sync runs until synced and is
// checked the same way.
//
//   KCACHE_KILLS=1000 KCACHE_BIN=build/tools/kcache/kcache build/tests/sync_kill_test
//
// KCACHE_KILL_LOGS=1 prints each killed sync's log.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "kcache/cache.h"
#include "kcache/rest_client.h"
#include "testing/command.h"
#include "testing/server_objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

const ResourceRef kPods{{"", "v1", "pods"}, true, ""};

int Kills() {
  const char* n = std::getenv("KCACHE_KILLS");
  return n && *n ? std::atoi(n) : 100;
}

// How one check after a kill ended.
enum class Outcome { kExact, kCutRelist, kBeyondHistory };

class SyncKillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Churn of about 160 changes a second over 2,000 pods, and a history of
    // 600 changes (about 4 s): a sync that starts after a longer pause
    // finds its resume point expired and relists. Every seventh request
    // (lists and watches alike) is answered 410 besides.
    server_ = StartServe(
        "--listen 127.0.0.1:0 --pods 2000 --namespaces 4 --nodes 10 "
        "--creates 20 --updates 100 --relabels 20 --deletes 20 "
        "--history 600 --fault-expire '*7' --seed 5");
    url_ = server_.url;
    ASSERT_FALSE(url_.empty()) << server_.banner;
    RestConfig config;
    config.server = url_;
    auto client = RestClient::Create(config);
    ASSERT_OK(client);
    client_ = *client;
  }
  void TearDown() override { Stop(server_.process, SIGTERM); }

  // The server's pods at `rv` exactly; Expired once `rv` has left its
  // history. A fault 410 is retried.
  StatusOr<Objects> ServerAt(const std::string& rv) { return ServerObjectsAt(*client_, kPods, rv); }

  // Opens the cache as the next start would, checks it, and compares it
  // with the server at its resume point.
  Outcome Check(const std::string& dir, const std::string& when) {
    auto cache = Cache::OpenReadOnly(dir);
    EXPECT_OK(cache) << when;
    if (!cache.ok()) return Outcome::kCutRelist;
    Status verified = (*cache)->Verify();
    EXPECT_OK(verified) << when;
    auto stats = (*cache)->Stats("pods");
    if (stats.status().IsNotFound()) return Outcome::kCutRelist;  // killed before any commit
    EXPECT_OK(stats) << when;
    if (!stats.ok() || stats->resource_version.empty() || stats->relist_in_progress) {
      return Outcome::kCutRelist;
    }
    auto pods = (*cache)->OpenKeyspace("pods");
    EXPECT_OK(pods) << when;
    if (!pods.ok()) return Outcome::kCutRelist;
    auto all = (*pods)->List();
    EXPECT_OK(all) << when;
    if (!all.ok()) return Outcome::kCutRelist;
    Objects have;
    for (const ObjectPtr& p : *all) have[p->namespace_() + "/" + p->name()] = p->resource_version();
    EXPECT_EQ(have.size(), stats->objects) << when;
    StatusOr<Objects> want = ServerAt(stats->resource_version);
    if (want.status().IsExpired()) return Outcome::kBeyondHistory;
    EXPECT_OK(want) << when;
    if (!want.ok()) return Outcome::kCutRelist;
    if (have != *want) {
      size_t missing = 0, extra = 0, other = 0;
      for (const auto& [k, rv] : *want) {
        auto it = have.find(k);
        if (it == have.end()) {
          ++missing;
        } else if (it->second != rv) {
          ++other;
        }
      }
      for (const auto& [k, rv] : have) extra += want->count(k) ? 0 : 1;
      ADD_FAILURE() << when << ": at resourceVersion " << stats->resource_version
                    << " the cache differs from the server: " << missing << " missing, " << extra
                    << " extra, " << other << " at another resourceVersion";
    }
    return Outcome::kExact;
  }

  ServeProcess server_;
  std::string url_;
  std::shared_ptr<RestClient> client_;
};

TEST_F(SyncKillTest, KillsDuringSyncChurnAndRelistsLoseNothingCommitted) {
  TempDir dir;
  const std::string cache = dir.Sub("cache");
  const int kills = Kills();
  std::mt19937_64 rng(20261124);
  int exact = 0, cut = 0, beyond = 0;
  int listed = 0, relisted = 0;  // rounds whose sync applied a list; met a 410
  bool relisting = false;        // the next start relists
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < kills && !HasFailure(); ++round) {
    Background sync = StartCommand(KcacheBin() + " sync pods --server " + url_ + " --cache " +
                                   cache + " --log-format=json");
    ASSERT_GT(sync.pid, 0);
    // A quarter of the kills come within 300 ms (the open, the probe, a
    // first list), half within 1.5 s (mostly the watch), and a quarter
    // within 4 s: a relist after a 410 starts after a backoff of 0.8 to
    // 1.6 s, as client-go's does.
    // A start that must relist is killed between 0.8 and 3.5 s, so that
    // about half the relists are cut and the rest complete.
    const uint64_t phase = rng() % 4;
    const int ms = relisting    ? 800 + static_cast<int>(rng() % 2700)
                   : phase == 0 ? static_cast<int>(rng() % 300)
                   : phase == 3 ? 1500 + static_cast<int>(rng() % 2500)
                                : 300 + static_cast<int>(rng() % 1200);
    usleep(static_cast<useconds_t>(ms) * 1000);
    kill(sync.pid, SIGKILL);
    int status = 0;
    waitpid(sync.pid, &status, 0);
    std::string log = Drain(sync.out);
    ASSERT_TRUE(WIFSIGNALED(status)) << "round " << round << ": the sync stopped by itself\n"
                                     << log;
    if (std::getenv("KCACHE_KILL_LOGS"))
      std::fprintf(stderr, "--- round %d, killed after %d ms\n%s", round, ms, log.c_str());
    if (log.find(" applied (") != std::string::npos) ++listed;
    if (log.find("): relisting") != std::string::npos) ++relisted;
    const Outcome outcome = Check(
        cache, "round " + std::to_string(round) + " (killed after " + std::to_string(ms) + " ms)");
    switch (outcome) {
      case Outcome::kExact:
        ++exact;
        break;
      case Outcome::kCutRelist:
        ++cut;
        break;
      case Outcome::kBeyondHistory:
        ++beyond;
        break;
    }
    relisting = outcome != Outcome::kExact;
    // One start in eight comes after the history has moved past the resume
    // point: a relist, which the next kill may cut.
    if (rng() % 8 == 0) {
      usleep(4'500'000);
      relisting = true;
    }
  }
  // The end: a sync that runs until synced holds the server's state.
  CommandResult last = RunCommand(KcacheBin() + " sync pods --server " + url_ + " --cache " +
                                  cache + " --until-synced 2>&1");
  ASSERT_EQ(last.exit_code, 0) << last.output;
  EXPECT_EQ(Check(cache, "after the last sync"), Outcome::kExact);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%d kills in %.0f s: %d exact at their resume point, %d cut inside a list, %d "
      "beyond the server's history; %d syncs applied a list, %d met a 410 and "
      "relisted\n",
      kills, secs, exact, cut, beyond, listed, relisted);
  RecordProperty("exact", exact);
  RecordProperty("cut", cut);
  // The run proves something only if many kills left a resume point to
  // compare, and the syncs went through lists and relists as well as
  // watches. (On a loaded machine lists take longer and more kills cut
  // them: 494 of 1,000 exact in one run beside a full test run, 96 of 100
  // on an idle one.)
  EXPECT_GE(exact, kills / 4);
  if (kills >= 50) {
    EXPECT_GT(listed, 0);
    EXPECT_GT(relisted, 0);
  }
}

// A first sync killed sooner than its list takes (a neighbour's OOM, a
// failing liveness probe), again and again: each start continues the list
// from the last page the killed one committed (a streaming list cut short
// is followed by a paginated one), so the cache is complete after a few
// starts (8 in one run). Before, every start listed from the first object
// again: the same run synced at its 35th start, and with kills 0.2-0.8 s
// apart none ever did. Every kill leaves a cache that passes Verify and no
// resume point until the list ends (invariant 3).
TEST(SyncCrashLoopTest, AFirstSyncKilledSoonerThanItsListTakesStillFinishes) {
  constexpr int kPods = 60000;
  ServeProcess server = StartServe("--listen 127.0.0.1:0 --pods " + std::to_string(kPods) +
                                   " --creates 0 --updates 0 --relabels 0 --deletes 0 --seed 3");
  ASSERT_FALSE(server.url.empty()) << server.banner;
  TempDir dir;
  const std::string sync = KcacheBin() + " sync pods --server " + server.url + " --cache ";
  // A whole sync's time, on this machine as loaded as it is now.
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult once = RunCommand(sync + dir.Sub("once") + " --until-synced 2>&1");
  ASSERT_EQ(once.exit_code, 0) << once.output;
  const double whole_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::string cache = dir.Sub("cache");
  int attempts = 0, continued = 0;
  bool synced = false;
  std::string logs;
  while (!synced && attempts < 40 && !HasFailure()) {
    ++attempts;
    Background run = StartCommand(sync + cache + " --until-synced");
    ASSERT_GT(run.pid, 0);
    int status = 0;
    const auto start = std::chrono::steady_clock::now();
    // Killed at half a whole sync's time, unless it is done before.
    while (waitpid(run.pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() - start >
          std::chrono::duration<double, std::milli>(whole_ms / 2)) {
        kill(run.pid, SIGKILL);
        waitpid(run.pid, &status, 0);
        break;
      }
      usleep(10'000);
    }
    const std::string log = Drain(run.out);
    logs += "--- attempt " + std::to_string(attempts) + "\n" + log;
    synced = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    ASSERT_TRUE(synced || WIFSIGNALED(status)) << log;
    if (log.find("continuing the LIST cut short") != std::string::npos) ++continued;
    auto opened = Cache::OpenReadOnly(cache);
    if (!opened.ok() && opened.status().IsNotFound()) continue;  // killed before creating it
    ASSERT_OK(opened) << "attempt " << attempts << ": " << opened.status();
    ASSERT_OK((*opened)->Verify()) << "attempt " << attempts;
    auto stats = (*opened)->Stats("pods");
    if (!synced && stats.ok() && !stats->resource_version.empty() && !stats->relist_in_progress) {
      // A resume point only once the list is complete (invariant 3). The kill
      // can land after the list's commit and before the process exits (seen
      // once in CI): then the cache holds every pod and the sync is done.
      EXPECT_EQ(stats->objects, static_cast<uint64_t>(kPods))
          << "attempt " << attempts << ": invariant 3: a resume point before the list ended";
      synced = true;
    }
  }
  ASSERT_TRUE(synced) << "not synced after " << attempts << " starts killed at " << whole_ms / 2
                      << " ms\n"
                      << logs;
  auto opened = Cache::OpenReadOnly(cache);
  ASSERT_OK(opened);
  auto stats = (*opened)->Stats("pods");
  ASSERT_OK(stats);
  EXPECT_EQ(stats->objects, static_cast<uint64_t>(kPods));
  EXPECT_FALSE(stats->relist_in_progress);
  std::printf(
      "a sync of %d pods takes %.0f ms; killed at half that, it synced at start %d, %d "
      "of the starts continuing a list\n",
      kPods, whole_ms, attempts, continued);
  EXPECT_GE(attempts, 2) << "no kill landed inside the list";
  EXPECT_GE(continued, 1) << logs;
  Stop(server.process, SIGTERM);
}

}  // namespace
}  // namespace kcache::testing
