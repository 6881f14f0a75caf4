// SPDX-License-Identifier: Apache-2.0

// util/coding.h: varints and fixed-width integers.

#include "util/coding.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace kcache::util {
namespace {

TEST(CodingTest, VarintsRoundTripAndRejectTruncation) {
  for (uint32_t v : {0u, 1u, 127u, 128u, 16383u, 16384u, 0xffffffffu}) {
    std::string s;
    PutVarint32(&s, v);
    std::string_view in = s;
    uint32_t got = 0;
    ASSERT_TRUE(GetVarint32(&in, &got)) << v;
    EXPECT_EQ(got, v);
    EXPECT_TRUE(in.empty());
    std::string_view cut(s.data(), s.size() - 1);
    EXPECT_FALSE(GetVarint32(&cut, &got)) << v;
  }
  std::string_view too_long("\xff\xff\xff\xff\xff\x01", 6);
  uint32_t got;
  EXPECT_FALSE(GetVarint32(&too_long, &got));
  char buf[4];
  PutFixed32(buf, 0x12345678);
  EXPECT_EQ(buf[0], 0x78);
  EXPECT_EQ(GetFixed32(buf), 0x12345678u);
}

}  // namespace
}  // namespace kcache::util
