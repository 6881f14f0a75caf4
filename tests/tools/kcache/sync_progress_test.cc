// SPDX-License-Identifier: Apache-2.0

// kcache sync's progress line: totals, rate, each resource's state, and the
// time left once every list under way has said its size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/kcache/snapshot.h"
#include "tools/kcache/sync.h"

namespace kcache::tool {
namespace {

TEST(SyncProgressTest, ListsThatSaidTheirSizeGiveTheTimeLeft) {
  // 20,000 objects in 2 s (10,000/s); 60,000 of pods and 20,000 of configmaps
  // to go: about 8 s.
  std::vector<ProgressSample> samples = {
      {"configmaps", 5000, 5000000, 5000, 25000, false},
      {"nodes", 12, 12000, 0, 0, true},
      {"pods", 14988, 95000000, 14988, 74988, false},
  };
  EXPECT_EQ(ProgressLine(samples, 2.0),
            "syncing: 20000 objects, 100.0 MB, 10000 objects/s, about 8 s left "
            "(configmaps 5000/25000 listing, nodes 12 synced, pods 14988/74988 listing)");
}

TEST(SyncProgressTest, NoTimeLeftWhereAListDidNotSayItsSize) {
  // A streaming list, or a server that sends no remainingItemCount.
  std::vector<ProgressSample> samples = {
      {"configmaps", 5000, 5000000, 5000, 25000, false},
      {"pods", 15000, 95000000, 15000, 0, false},
  };
  EXPECT_EQ(ProgressLine(samples, 2.0),
            "syncing: 20000 objects, 100.0 MB, 10000 objects/s "
            "(configmaps 5000/25000 listing, pods 15000 listing)");
}

TEST(SyncProgressTest, LongWaitsAreSaidInMinutesAndSyncedHasNone) {
  std::vector<ProgressSample> listing = {{"pods", 100, 100000, 100, 1000000, false}};
  EXPECT_EQ(ProgressLine(listing, 1.0),
            "syncing: 100 objects, 0.1 MB, 100 objects/s, about 167 min left "
            "(pods 100/1000000 listing)");
  std::vector<ProgressSample> synced = {{"pods", 7, 7000, 0, 0, true}};
  EXPECT_EQ(ProgressLine(synced, 1.0), "synced: 7 objects, 0.0 MB, 7 objects/s (pods 7 synced)");
}

// kcache snapshot export/import/verify: objects of the manifest's, row and
// file bytes, rate, time left.
TEST(SyncProgressTest, SnapshotLinesSayBytesAndTheTimeLeft) {
  SnapshotProgress p;
  p.objects = 250000;
  p.objects_total = 1000000;
  p.raw_bytes = 1600000000;
  p.file_bytes = 400000000;
  EXPECT_EQ(SnapshotProgressLine(p, "exporting", 2.0),
            "exporting: 250000/1000000 objects, 1600.0 MB of rows, 400.0 MB of file, 800.0 MB/s, "
            "about 6 s left");
  p.objects = p.objects_total;
  EXPECT_EQ(SnapshotProgressLine(p, "verifying", 8.0),
            "verifying: 1000000/1000000 objects, 1600.0 MB of rows, 400.0 MB of file, 200.0 MB/s");
}

}  // namespace
}  // namespace kcache::tool
