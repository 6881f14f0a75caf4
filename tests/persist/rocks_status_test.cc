// SPDX-License-Identifier: Apache-2.0

// RocksDB's statuses in kcache's words.

#include "persist/rocks_status.h"

#include <gtest/gtest.h>

namespace kcache::storage {
namespace {

TEST(RocksStatusTest, KeepsTheCodeAndContextAndSaysEachCodeOnce) {
  Status s = FromRocks(rocksdb::Status::Corruption("Corruption: checksum mismatch"), "open c");
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.message(), "open c: Corruption: checksum mismatch");
  EXPECT_EQ(FromRocks(rocksdb::Status::IOError("IOError: disk"), "write").message(),
            "write: IO error: IOError: disk");
}

// RocksDB looks for a table file as NNNNNN.sst, then by LevelDB's name,
// and reports the last; kcache never writes the latter.
TEST(RocksStatusTest, NamesTableFilesAsTheyAreOnDisk) {
  Status s = FromRocks(
      rocksdb::Status::PathNotFound("While open a file for random read: /c/000027.ldb: No such "
                                    "file or directory"),
      "open c");
  EXPECT_EQ(s.message().find(".ldb"), std::string_view::npos) << s.message();
  EXPECT_NE(s.message().find("/c/000027.sst"), std::string_view::npos) << s.message();
}

TEST(RocksStatusTest, AHeldLockIsBusy) {
  Status s = FromRocks(rocksdb::Status::IOError("lock hold by current process", "/c/LOCK"), "open");
  EXPECT_EQ(s.code(), StatusCode::kBusy);
}

}  // namespace
}  // namespace kcache::storage
