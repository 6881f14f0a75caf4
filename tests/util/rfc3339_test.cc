// SPDX-License-Identifier: Apache-2.0

#include "util/rfc3339.h"

#include <gtest/gtest.h>

namespace kcache::util {
namespace {

TEST(Rfc3339Test, ParsesWhatItFormats) {
  for (const char* s : {"2026-11-24T18:33:44.766Z", "1970-01-01T00:00:00.000Z",
                        "1969-12-31T23:59:59.999Z", "2200-06-01T12:00:00.001Z"}) {
    auto t = ParseRfc3339(s);
    ASSERT_TRUE(t.has_value()) << s;
    EXPECT_EQ(FormatRfc3339(*t), s);
  }
  EXPECT_EQ(FormatRfc3339(*ParseRfc3339("2026-01-01T01:00:00Z")), "2026-01-01T01:00:00.000Z");
}

// Found by storage_records_fuzz: a manifest time in the year 3763
// overflowed system_clock's 64-bit nanoseconds (undefined behaviour).
TEST(Rfc3339Test, TimesOutsideTheClocksRangeAreRefused) {
  for (const char* s : {"3763-11-24T18:33:42.395Z", "2300-01-01T00:00:00Z", "1500-01-01T00:00:00Z",
                        "2026-11-24T18:33:42", "2026-11-24T18:33:42.Z", "x"}) {
    EXPECT_FALSE(ParseRfc3339(s).has_value()) << s;
  }
}

}  // namespace
}  // namespace kcache::util
