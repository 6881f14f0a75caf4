// SPDX-License-Identifier: Apache-2.0

// persist/bulk_load.h: a cache built from rows through table files, and
// installed at its target only when whole (snapshots' import uses it:
// snapshot_test.cc).

#include "persist/bulk_load.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "kcache/cache.h"
#include "persist/db.h"
#include "persist/encoding.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

namespace fs = std::filesystem;
using storage::BulkLoader;
using storage::Family;
using testing::MakePodCache;
using testing::TempDir;

using Rows = std::map<std::pair<Family, std::string>, std::string>;

// Every row of the closed cache at `dir`, but its format.
Rows ReadRows(const std::string& dir) {
  Rows rows;
  StatusOr<std::shared_ptr<storage::Db>> db = storage::OpenDb(dir, {}, /*read_only=*/true);
  EXPECT_OK(db);
  if (!db.ok()) return rows;
  std::vector<rocksdb::ColumnFamilyHandle*> families = storage::RowFamilies(**db);
  for (int f = 0; f < storage::kFamilies; ++f) {
    std::unique_ptr<rocksdb::Iterator> it((*db)->db->NewIterator({}, families[f]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (f == 0 && it->key() == storage::kFormatKey) continue;
      rows[{static_cast<Family>(f), it->key().ToString()}] = it->value().ToString();
    }
    EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  }
  return rows;
}

TEST(BulkLoadTest, TheRowsOfACacheLoadIntoAnEqualCache) {
  TempDir tmp;
  const std::string from = tmp.path() + "/from", to = tmp.path() + "/to";
  MakePodCache(from, 50);
  const Rows rows = ReadRows(from);
  ASSERT_GT(rows.size(), 50u);
  auto loader = BulkLoader::Create(to);
  ASSERT_OK(loader);
  for (const auto& [where, value] : rows)
    ASSERT_OK((*loader)->Add(where.first, where.second, value));
  ASSERT_OK((*loader)->Finish());
  EXPECT_EQ(ReadRows(to), rows);
  auto cache = Cache::Open(to);
  ASSERT_OK(cache);
  EXPECT_OK((*cache)->Verify());
  auto pods = (*cache)->OpenKeyspace("pods");
  ASSERT_OK(pods);
  auto p7 = (*pods)->GetByKey("ns/p7");
  ASSERT_OK(p7);
  ASSERT_NE(*p7, nullptr);
  EXPECT_EQ((*p7)->resource_version(), "8");
}

TEST(BulkLoadTest, RowsOutOfOrderOrTheFormatRowAreRefused) {
  TempDir tmp;
  auto loader = BulkLoader::Create(tmp.path() + "/to");
  ASSERT_OK(loader);
  EXPECT_THAT((*loader)->Add(Family::kMeta, storage::kFormatKey, "2"),
              testing::StatusIs(StatusCode::kInvalidArgument));
  ASSERT_OK((*loader)->Add(Family::kObjects, "b", "{}"));
  EXPECT_FALSE((*loader)->Add(Family::kObjects, "a", "{}").ok());
  EXPECT_FALSE((*loader)->Add(Family::kObjects, "b", "{}").ok());
}

TEST(BulkLoadTest, AnAbandonedLoadLeavesNothingBehind) {
  TempDir tmp;
  const std::string from = tmp.path() + "/from", to = tmp.path() + "/to";
  MakePodCache(from, 10);
  const Rows rows = ReadRows(from);
  {
    auto loader = BulkLoader::Create(to);
    ASSERT_OK(loader);
    for (const auto& [where, value] : rows) {
      ASSERT_OK((*loader)->Add(where.first, where.second, value));
    }
  }  // no Finish
  EXPECT_FALSE(fs::exists(to) && !fs::is_empty(to)) << to << " holds something";
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    const bool empty_target = e.path() == to && fs::is_empty(to);
    EXPECT_TRUE(e.path().filename() == "from" || empty_target) << "left behind: " << e.path();
  }
  // Invariant 6 (bad input loses nothing): a target that holds something
  // else is refused, and left untouched.
  fs::create_directories(to);
  { std::ofstream(to + "/mine") << "x"; }
  EXPECT_FALSE(BulkLoader::Create(to).ok());
  EXPECT_TRUE(fs::exists(to + "/mine"));
}

}  // namespace
}  // namespace kcache
