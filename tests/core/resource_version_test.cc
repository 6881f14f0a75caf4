// SPDX-License-Identifier: Apache-2.0

#include "core/resource_version.h"

#include <gtest/gtest.h>

namespace kcache {
namespace {

// Invariant 5: resourceVersions are compared as integers only where both are
// decimal; otherwise there is no answer and callers fall back.
TEST(ResourceVersionTest, ComparesDecimalsOfAnyLength) {
  EXPECT_EQ(CompareResourceVersions("10", "9"), 1);
  EXPECT_EQ(CompareResourceVersions("9", "10"), -1);
  EXPECT_EQ(CompareResourceVersions("123", "123"), 0);
  EXPECT_EQ(CompareResourceVersions("0010", "10"), 0);
  EXPECT_EQ(CompareResourceVersions("99999999999999999999999", "100000000000000000000000"), -1);
  EXPECT_EQ(CompareResourceVersions("abc", "10"), std::nullopt);
  EXPECT_EQ(CompareResourceVersions("", "10"), std::nullopt);
  EXPECT_EQ(CompareResourceVersions("-1", "10"), std::nullopt);
}

TEST(ResourceVersionTest, ParsesAsTheApiServerReadsItsOwn) {
  EXPECT_EQ(ParseResourceVersion("0"), 0u);
  EXPECT_EQ(ParseResourceVersion("42"), 42u);
  EXPECT_EQ(ParseResourceVersion("007"), 7u);
  EXPECT_EQ(ParseResourceVersion("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", "18446744073709551616", "-1", "+1", " 1", "1 ", "1a", "0x1"}) {
    EXPECT_EQ(ParseResourceVersion(bad), std::nullopt) << bad;
  }
}

TEST(ResourceVersionTest, CanonicalIsTheNumbersOwnSpelling) {
  EXPECT_EQ(ParseCanonicalResourceVersion("0"), 0u);
  EXPECT_EQ(ParseCanonicalResourceVersion("42"), 42u);
  EXPECT_EQ(ParseCanonicalResourceVersion("042"), std::nullopt);
  EXPECT_EQ(ParseCanonicalResourceVersion("00"), std::nullopt);
  EXPECT_EQ(ParseCanonicalResourceVersion(""), std::nullopt);
}

}  // namespace
}  // namespace kcache
