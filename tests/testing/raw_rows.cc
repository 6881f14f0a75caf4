// SPDX-License-Identifier: Apache-2.0

#include "testing/raw_rows.h"

#include <rocksdb/db.h>

#include <vector>

#include <gtest/gtest.h>

namespace kcache::testing {

void WriteRaw(const std::string& dir, const std::string& family, const std::string& key,
              std::optional<std::string> value) {
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  std::vector<std::string> names;
  rocksdb::Status listed = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names);
  ASSERT_TRUE(listed.ok()) << listed.ToString();
  size_t at = names.size();
  for (const std::string& n : names) {
    if (n == family) at = cfs.size();
    cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  }
  ASSERT_LT(at, names.size()) << "no column family " << family;
  rocksdb::Status opened = rocksdb::DB::Open(rocksdb::DBOptions(), dir, cfs, &handles, &raw);
  ASSERT_TRUE(opened.ok()) << opened.ToString();
  rocksdb::Status written =
      value ? raw->Put({}, handles[at], key, *value) : raw->Delete({}, handles[at], key);
  EXPECT_TRUE(written.ok()) << written.ToString();
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
}

}  // namespace kcache::testing
