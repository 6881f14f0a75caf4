// SPDX-License-Identifier: Apache-2.0

// Snapshots against the real kube-apiserver: a snapshot exported while a
// sync runs, imported into a new cache, resumes syncing without a LIST; one
// whose resourceVersions the server has compacted away relists once and
// rewrites only what changed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "integration/cluster.h"
#include "integration/configmaps.h"
#include "kcache/cache.h"
#include "kcache/snapshot.h"
#include "testing/command.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Api;
using testing::CacheState;
using testing::Cluster;
using testing::Eventually;
using testing::SyncProcess;

std::string Kcache(const std::string& args) {
  const char* bin = std::getenv("KCACHE_BIN");
  EXPECT_NE(bin, nullptr) << "KCACHE_BIN is not set";
  return std::string(bin ? bin : "kcache") + " " + args + " 2>&1";
}

std::map<std::string, std::string> ReadState(const std::string& cache_dir) {
  auto cache = Cache::OpenReadOnly(cache_dir);
  if (!cache.ok()) return {};
  auto ks = (*cache)->OpenKeyspace("configmaps");
  if (!ks.ok()) return {};
  return CacheState(**ks);
}

// Design invariant "a restore resumes": the imported cache starts from the
// snapshot's resume point with one limit=1 probe and no LIST, and catches up
// with what changed after the snapshot through the watch.
TEST(SnapshotIntegrationTest, SnapshotTakenDuringSyncRestoresAndResumesWithoutList) {
  Api api(Cluster::Get().Namespace("snap-resume"));
  for (int i = 0; i < 40; ++i) api.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  const std::string source = dir.Sub("source"), file = dir.Sub("cms.kcs"),
                    restored = dir.Sub("restored");
  {
    SyncProcess sync(api.ns(), source, dir.Sub("sync-source.log"));
    ASSERT_TRUE(sync.WaitSynced()) << sync.Log();
    api.Update("cm-0", "2");
    ASSERT_TRUE(Eventually([&] { return ReadState(source) == api.State(); }));
    // Exported while the sync holds the cache.
    testing::CommandResult r =
        testing::RunCommand(Kcache("snapshot export --cache " + source + " " + file));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, ::testing::HasSubstr("configmaps   ConfigMap   40"));
    sync.Kill(SIGTERM);
  }
  testing::CommandResult verify = testing::RunCommand(Kcache("snapshot verify " + file));
  ASSERT_EQ(verify.exit_code, 0) << verify.output;
  auto manifest = ReadSnapshotManifest(file);
  ASSERT_OK(manifest) << manifest.status();
  ASSERT_EQ(manifest->resources.size(), 1u);
  EXPECT_EQ(manifest->resources[0].objects, 40u);
  ASSERT_TRUE(manifest->cluster.has_value());
  EXPECT_THAT(manifest->cluster->version, ::testing::StartsWith("v1."));
  const std::string snapshot_rv = manifest->resources[0].resource_version;

  // `kcache version` tells the cluster version the sync recorded: the real
  // server's gitVersion, from its /version.
  auto served = Cluster::Get().Admin()->Get("/version");
  ASSERT_OK(served);
  const std::string git = nlohmann::json::parse(*served)["gitVersion"];
  for (const std::string& where : {"--snapshot " + file, "--cache " + source}) {
    testing::CommandResult version = testing::RunCommand(Kcache("version " + where));
    ASSERT_EQ(version.exit_code, 0) << version.output;
    EXPECT_THAT(version.output, ::testing::HasSubstr("\nServer Version: " + git + "\n"));
    EXPECT_THAT(version.output,
                ::testing::HasSubstr("\nServer: " + Cluster::Get().server() + "\n"));
  }
  testing::CommandResult json = testing::RunCommand(Kcache("version -o json --snapshot " + file));
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(nlohmann::json::parse(json.output)["recorded"]["serverVersion"], git);

  // The snapshot reads offline as the cache did.
  testing::CommandResult get = testing::RunCommand(
      Kcache("get cm cm-0 -n " + api.ns() + " --snapshot " + file + " -o json"));
  ASSERT_EQ(get.exit_code, 0) << get.output;
  EXPECT_EQ(nlohmann::json::parse(get.output)["data"]["k"], "2");

  api.Create("after");
  api.Update("cm-1", "3");
  api.Delete("cm-2");
  testing::CommandResult import =
      testing::RunCommand(Kcache("snapshot import " + file + " --cache " + restored));
  ASSERT_EQ(import.exit_code, 0) << import.output;

  double lists = api.ListMetric("apiserver_request_total");
  double bytes = api.ListMetric("apiserver_response_sizes_sum");
  SyncProcess sync(api.ns(), restored, dir.Sub("sync-restored.log"));
  ASSERT_TRUE(sync.WaitSynced()) << sync.Log();
  EXPECT_THAT(sync.Log(), ::testing::HasSubstr("resuming the watch from resourceVersion " +
                                               snapshot_rv + " (no LIST)"));
  EXPECT_THAT(sync.Log(), ::testing::Not(::testing::HasSubstr("LIST of")));
  // Counted before the test's own LIST below.
  EXPECT_EQ(api.ListMetric("apiserver_request_total") - lists, 1) << "only the limit=1 probe";
  EXPECT_LT(api.ListMetric("apiserver_response_sizes_sum") - bytes, 4096) << "a probe, not a list";
  auto want = api.State();
  EXPECT_TRUE(Eventually([&] { return ReadState(restored) == want; }));
  sync.Kill(SIGTERM);

  // What changed since the snapshot, object by object and field by field.
  testing::CommandResult diff = testing::RunCommand(Kcache("diff " + file + " " + restored));
  EXPECT_EQ(diff.exit_code, 1) << diff.output;
  EXPECT_THAT(diff.output,
              ::testing::HasSubstr("configmaps: 1 added, 1 removed, 1 changed, 38 unchanged"));
  EXPECT_THAT(diff.output, ::testing::HasSubstr("+ " + api.ns() + "/after"));
  EXPECT_THAT(diff.output, ::testing::HasSubstr("- " + api.ns() + "/cm-2"));
  EXPECT_THAT(diff.output, ::testing::HasSubstr("data.k: \"1\" -> \"3\""));
}

// A snapshot older than the server's compaction window: the restored cache
// relists once, and the relist rewrites only the objects that changed.
TEST(SnapshotIntegrationTest, ExpiredSnapshotRelistsOnceWithADiff) {
  Api api(Cluster::Get().Namespace("snap-expired"));
  for (int i = 0; i < 40; ++i) api.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  const std::string source = dir.Sub("source"), file = dir.Sub("cms.kcs"),
                    restored = dir.Sub("restored");
  {
    SyncProcess sync(api.ns(), source, dir.Sub("sync-source.log"));
    ASSERT_TRUE(sync.WaitSynced()) << sync.Log();
    sync.Kill(SIGTERM);
  }
  testing::CommandResult r =
      testing::RunCommand(Kcache("snapshot export --cache " + source + " " + file));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  api.Create("after");
  api.Update("cm-1", "3");
  api.Delete("cm-2");
  Cluster::Get().CompactEtcd();

  ASSERT_EQ(
      testing::RunCommand(Kcache("snapshot import " + file + " --cache " + restored)).exit_code, 0);
  SyncProcess sync(api.ns(), restored, dir.Sub("sync-restored.log"));
  ASSERT_TRUE(sync.WaitSynced()) << sync.Log();
  auto want = api.State();
  EXPECT_TRUE(Eventually([&] { return ReadState(restored) == want; }));
  // 40 listed: "after" and cm-1 written, the 38 others left as they were.
  EXPECT_THAT(sync.Log(), ::testing::HasSubstr("LIST of 40 objects"));
  EXPECT_THAT(sync.Log(), ::testing::HasSubstr("(2 written, 38 unchanged)"));
  sync.Kill(SIGTERM);
  auto cache = Cache::Open(restored);
  ASSERT_OK(cache) << cache.status();
  EXPECT_OK((*cache)->Verify());
}

}  // namespace
}  // namespace kcache
