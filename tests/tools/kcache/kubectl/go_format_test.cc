// SPDX-License-Identifier: Apache-2.0

// Values written as kubectl (Go) writes them.
#include "tools/kcache/kubectl/go_format.h"

#include <gtest/gtest.h>

namespace kcache::tool {
namespace {

TEST(GoFormatTest, JsonEscapesHtmlAndSortsKeys) {
  nlohmann::json v = {{"b", "x<y>&z"}, {"a", {1, 2.5, nullptr, true}}, {"c", "\u2028\t"}};
  EXPECT_EQ(GoJson(v), R"({"a":[1,2.5,null,true],"b":"x\u003cy\u003e\u0026z","c":"\u2028\t"})");
  EXPECT_EQ(GoJson(v, 4),
            "{\n    \"a\": [\n        1,\n        2.5,\n        null,\n        true\n"
            "    ],\n    \"b\": \"x\\u003cy\\u003e\\u0026z\",\n    \"c\": \"\\u2028\\t\"\n}");
  EXPECT_EQ(GoJson(nlohmann::json::object()), "{}");
  EXPECT_EQ(GoJson(nlohmann::json::parse("1e-7")), "1e-7");
  EXPECT_EQ(GoJson(nlohmann::json::parse("1e21")), "1e+21");
  EXPECT_EQ(GoJson(nlohmann::json::parse("100000000000000000000.0")), "100000000000000000000");
}

TEST(GoFormatTest, ValuesAsPercentV) {
  EXPECT_EQ(GoValue(nlohmann::json::parse(R"({"b":[1,"x"],"a":{"c":null}})")),
            "map[a:map[c:<nil>] b:[1 x]]");
  EXPECT_EQ(GoFloat(0.25), "0.25");
  EXPECT_EQ(GoFloat(123456), "123456");
  EXPECT_EQ(GoFloat(1e6), "1e+06");
  EXPECT_EQ(GoFloat(0.00001), "1e-05");
  EXPECT_EQ(GoFloat(-2.5e-3), "-0.0025");
}

}  // namespace
}  // namespace kcache::tool
