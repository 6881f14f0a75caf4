// SPDX-License-Identifier: Apache-2.0

// The fault matrix of `kcache sync` end to end: a sync of a `kcache serve`
// cluster while the server injects each of its faults (alone, then all at
// once), while the server is killed and started again on the same port
// (with the same history, a history reset to lower resourceVersions, and
// another cluster whose resourceVersions pass the cache's), and while a list
// stalls when SIGTERM comes. After each, the cache passes Verify and holds
// exactly the server's objects at its resume point (invariants 1 and 3).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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

std::shared_ptr<RestClient> ClientOf(const ServeProcess& s) {
  RestConfig config;
  config.server = s.url;
  RestClientOptions o;
  o.request_timeout = std::chrono::seconds(3);  // a stalled answer is tried again
  auto c = RestClient::Create(config, o);
  EXPECT_OK(c);
  return c.ok() ? *c : nullptr;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Waits (up to `seconds`) until the file holds `what` at least `n` times.
bool WaitForLog(const std::string& path, const std::string& what, size_t n = 1, int seconds = 60) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Count(ReadFile(path), what) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The cache's pods and resume point, read as the next start would, after
// Verify. "" as resume point: none (a relist was cut short).
struct Cached {
  std::string resource_version;
  Objects pods;
};

Cached ReadCache(const std::string& dir, const std::string& when) {
  Cached out;
  auto cache = Cache::OpenReadOnly(dir);
  EXPECT_OK(cache) << when;
  if (!cache.ok()) return out;
  EXPECT_OK((*cache)->Verify()) << when;
  auto stats = (*cache)->Stats("pods");
  EXPECT_OK(stats) << when;
  if (!stats.ok()) return out;
  if (!stats->relist_in_progress) out.resource_version = stats->resource_version;
  auto pods = (*cache)->OpenKeyspace("pods");
  EXPECT_OK(pods) << when;
  if (!pods.ok()) return out;
  auto all = (*pods)->List();
  EXPECT_OK(all) << when;
  if (!all.ok()) return out;
  for (const ObjectPtr& p : *all)
    out.pods[p->namespace_() + "/" + p->name()] = p->resource_version();
  return out;
}

// The cache holds exactly the server's pods at the cache's resume point.
void ExpectSameAsServer(const std::string& dir, RestClient& client, const std::string& when) {
  Cached c = ReadCache(dir, when);
  ASSERT_FALSE(c.resource_version.empty()) << when << ": no resume point";
  StatusOr<Objects> want = ServerObjectsAt(client, kPods, c.resource_version, 12);
  ASSERT_OK(want) << when;
  if (c.pods == *want) return;
  size_t missing = 0, extra = 0, other = 0;
  for (const auto& [k, rv] : *want) {
    auto it = c.pods.find(k);
    missing += it == c.pods.end();
    other += it != c.pods.end() && it->second != rv;
  }
  for (const auto& [k, rv] : c.pods) extra += want->count(k) ? 0 : 1;
  ADD_FAILURE() << when << ": at resourceVersion " << c.resource_version
                << " the cache differs from the server: " << missing << " missing, " << extra
                << " extra (" << c.pods.size() << " cached), " << other
                << " at another resourceVersion";
}

// A sync in the background, its log in a file.
Background StartSync(const std::string& args, const std::string& log) {
  return StartCommand(KcacheBin() + " sync pods " + args + " > " + log + " 2>&1");
}

const char kQuiet[] = " --nodes 5 --namespaces 3 --creates 0 --updates 0 --relabels 0 --deletes 0";

// Every fault `kcache serve` injects, alone and all at once, under a sync
// that lists, watches churn for a few seconds, stops on SIGTERM and resumes:
// each fault is retried (or relisted) until it passes, the sync exits 0,
// and the cache equals the server at its resume point.
TEST(SyncFaultTest, EveryServeFaultAloneAndCombined) {
  struct Fault {
    std::string name;   // as kcache_serve_faults_total names it ("" for --fault-slow)
    std::string flags;  // of kcache serve
  };
  // Alone, every third request (every second one would hit every watch of a
  // sync whose watches follow an identity check, a GET: no client gets
  // through that); together, one each on requests 3 to 8, one after the
  // other (1 and 2 are the sync's GETs of the kube-system namespace; a GET
  // takes only a 429 or a 500, so which other kinds reach a list or watch
  // depends on where the sync's GETs fall: at least three do).
  const std::vector<Fault> faults = {
      {"cut", "--fault-cut '*3'"},
      {"expire", "--fault-expire '*3'"},
      {"throttle", "--fault-throttle '*3' --retry-after 1"},
      {"internal-error", "--fault-error '*3'"},
      {"malformed", "--fault-malformed '*3'"},
      {"stall", "--fault-stall '*3'"},
      {"", "--fault-slow 400000"},
      {"all",
       "--fault-cut 3 --fault-expire 4 --fault-throttle 5 --fault-error 6 "
       "--fault-malformed 7 --fault-stall 8 --fault-slow 1000000"},
  };
  for (const auto& [name, flags] : faults) {
    SCOPED_TRACE(flags);
    TempDir dir;
    ServeProcess s = StartServe(
        "--listen 127.0.0.1:0 --pods 150 --namespaces 3 --nodes 5 --creates 2 "
        "--updates 20 --relabels 2 --deletes 2 --seed 3 " +
        flags);
    ASSERT_FALSE(s.url.empty());
    std::shared_ptr<RestClient> client = ClientOf(s);
    const std::string common =
        " --server " + s.url + " --cache " + dir.Sub("c") + " --request-timeout 2s";

    // A sync that lists and watches the churn, until SIGTERM.
    Background sync = StartSync(common, dir.Sub("log1"));
    EXPECT_TRUE(WaitForLog(dir.Sub("log1"), "synced at resourceVersion"))
        << ReadFile(dir.Sub("log1"));
    std::this_thread::sleep_for(std::chrono::seconds(3));
    EXPECT_EQ(Stop(sync, SIGTERM), 0) << ReadFile(dir.Sub("log1"));
    const std::string log1 = ReadFile(dir.Sub("log1"));
    EXPECT_EQ(Count(log1, "does not go away by retrying"), 0u) << log1;

    // It resumes, still under the fault, and ends synced.
    CommandResult resumed =
        RunCommand(KcacheBin() + " sync pods" + common + " --until-synced 2>&1");
    EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
    ExpectSameAsServer(dir.Sub("c"), *client, flags);
    // The faults were there to get through.
    StatusOr<std::string> metrics = client->Get("/metrics");
    ASSERT_OK(metrics);
    int kinds = 0;
    for (const char* kind : {"cut", "expire", "throttle", "internal-error", "malformed", "stall"}) {
      bool injected = metrics->find(std::string("kcache_serve_faults_total{fault=\"") + kind +
                                    "\"}") != std::string::npos;
      kinds += injected;
      EXPECT_TRUE(injected || name != kind) << kind << " never injected:\n" << *metrics;
    }
    if (name == "all") {
      EXPECT_GE(kinds, 3) << *metrics;
    }
    Stop(s.process, SIGTERM);
  }
}

// The server killed and started again on the same port while a sync runs:
//  1. with the same history (the same cluster, nothing changed): the watch
//     resumes where it was, no relist;
//  2. with a history reset to lower resourceVersions (the same cluster's
//     identity, 100 of its 300 pods): the watch's resourceVersion is too
//     large there, and the sync relists, keeping none of the other 200;
//  3. another cluster whose churn passes the cache's resourceVersion: its
//     kube-system uid differs, so the sync lists again from "" before any
//     watch, never mixing the two histories, and records the new identity.
TEST(SyncFaultTest, ServerRestartedOnTheSamePort) {
  TempDir dir;
  const std::string log = dir.Sub("log");
  ServeProcess a = StartServe(std::string("--listen 127.0.0.1:0 --seed 1 --pods 300") + kQuiet);
  ASSERT_FALSE(a.url.empty());
  const std::string listen = a.listen();
  Background sync =
      StartSync("--server " + a.url + " --cache " + dir.Sub("c") + " --request-timeout 3s", log);
  ASSERT_TRUE(WaitForLog(log, "synced at resourceVersion")) << ReadFile(log);
  const std::string outage = "retrying with backoff until the server answers";
  const std::string back = "the server answers again";

  // 1. The same history.
  Stop(a.process, SIGKILL);
  ASSERT_TRUE(WaitForLog(log, outage, 1)) << ReadFile(log);
  ServeProcess same = StartServe("--listen " + listen + " --seed 1 --pods 300" + kQuiet);
  ASSERT_EQ(same.url, a.url);
  ASSERT_TRUE(WaitForLog(log, back, 1)) << ReadFile(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Count(ReadFile(log), "relisting"), 0u) << ReadFile(log);
  ExpectSameAsServer(dir.Sub("c"), *ClientOf(same), "the same history");
  EXPECT_EQ(ReadCache(dir.Sub("c"), "the same history").pods.size(), 300u);

  // 2. The history reset to lower resourceVersions.
  Stop(same.process, SIGKILL);
  ASSERT_TRUE(WaitForLog(log, outage, 2)) << ReadFile(log);
  ServeProcess lower = StartServe("--listen " + listen + " --seed 1 --pods 100" + kQuiet);
  ASSERT_EQ(lower.url, a.url);
  ASSERT_TRUE(WaitForLog(log, "objects at resourceVersion", 2)) << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("Too large resource version"), std::string::npos) << ReadFile(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ExpectSameAsServer(dir.Sub("c"), *ClientOf(lower), "a history reset to lower versions");
  EXPECT_EQ(ReadCache(dir.Sub("c"), "lower").pods.size(), 100u);

  // 3. Another cluster, churning past the cache's resourceVersion.
  Stop(lower.process, SIGKILL);
  ASSERT_TRUE(WaitForLog(log, outage, 3)) << ReadFile(log);
  ServeProcess other =
      StartServe("--listen " + listen +
                 " --seed 2 --pods 50 --nodes 5 --namespaces 3 --creates 50 --updates 50 "
                 "--relabels 0 --deletes 0");
  ASSERT_EQ(other.url, a.url);
  ASSERT_TRUE(WaitForLog(log, "is not the one the store followed")) << ReadFile(log);
  ASSERT_TRUE(WaitForLog(log, "objects at resourceVersion", 3)) << ReadFile(log);
  ASSERT_TRUE(WaitForLog(log, "alone now")) << ReadFile(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Stop(sync, SIGTERM), 0) << ReadFile(log);
  ExpectSameAsServer(dir.Sub("c"), *ClientOf(other), "another cluster");
  // Recorded: the next sync resumes from the cache.
  CommandResult again = RunCommand(KcacheBin() + " sync pods --server " + a.url + " --cache " +
                                   dir.Sub("c") + " --until-synced 2>&1");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("is not the cluster"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("resuming the watch"), std::string::npos) << again.output;
  Stop(other.process, SIGTERM);
}

// SIGTERM while the resume probe's list stalls: the list is cancelled and
// the sync exits at once with its cache as it was, instead of after the
// request timeout (60 s by default).
TEST(SyncFaultTest, SigtermDuringAStalledListEndsTheSyncAtOnce) {
  TempDir dir;
  ServeProcess healthy =
      StartServe(std::string("--listen 127.0.0.1:0 --seed 1 --pods 100") + kQuiet);
  CommandResult first = RunCommand(KcacheBin() + " sync pods --server " + healthy.url +
                                   " --cache " + dir.Sub("c") + " --until-synced 2>&1");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  Stop(healthy.process, SIGTERM);

  // The same cluster, every list and watch stalling after its headers.
  ServeProcess stalled = StartServe(
      std::string("--listen 127.0.0.1:0 --seed 1 --pods 100 --fault-stall '*1'") + kQuiet);
  Background sync =
      StartSync("--server " + stalled.url + " --cache " + dir.Sub("c"), dir.Sub("log"));
  ASSERT_TRUE(WaitForLog(dir.Sub("log"), "resuming the watch")) << ReadFile(dir.Sub("log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the probe
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Stop(sync, SIGTERM), 0) << ReadFile(dir.Sub("log"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20))
      << ReadFile(dir.Sub("log"));
  EXPECT_NE(ReadFile(dir.Sub("log")).find("received SIGTERM"), std::string::npos)
      << ReadFile(dir.Sub("log"));
  EXPECT_EQ(ReadCache(dir.Sub("c"), "after SIGTERM").pods.size(), 100u);
  Stop(stalled.process, SIGTERM);
}

}  // namespace
}  // namespace kcache::testing
