// SPDX-License-Identifier: Apache-2.0

#include "util/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace kcache::util {
namespace {

// Check values of CRC-32C (RFC 3720, B.4, and the usual "123456789").
TEST(Crc32cTest, KnownValues) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62a8ab43u);
}

TEST(Crc32cTest, ExtendingEqualsOneCall) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 31));
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    EXPECT_EQ(Crc32cExtend(Crc32c(data.substr(0, cut)), data.data() + cut, data.size() - cut),
              Crc32c(data))
        << cut;
  }
}

}  // namespace
}  // namespace kcache::util
