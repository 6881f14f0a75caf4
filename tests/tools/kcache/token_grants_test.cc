// SPDX-License-Identifier: Apache-2.0

// tools/kcache/token_grants.h: the token file of kcache serve.

#include "tools/kcache/token_grants.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::tool {
namespace {

TEST(TokenGrantsTest, AFileWithAMistakeIsRefusedNamingItsLine) {
  kcache::testing::TempDir dir;
  auto read = [&](const std::string& text) {
    std::ofstream(dir.Sub("t")) << text;
    return ReadTokenGrants(dir.Sub("t")).status();
  };
  for (auto [text, said] : {
           std::pair{"a\nb resource=pods\n", "line 2: unknown field \"resource=pods\""},
           std::pair{"a namespaces=\n", "line 1: namespaces= is empty"},
           std::pair{"a resources=,\n", "line 1: resources= names no resource"},
           std::pair{"a name=x name=y\n", "line 1: name= given twice"},
           std::pair{"a\n# b\na\n", "line 3: the token of token-1 again"},
           std::pair{"# none\n\n", "holds no token"},
       }) {
    Status st = read(text);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(st.message().find(said), std::string::npos) << st;
  }
  EXPECT_EQ(ReadTokenGrants(dir.Sub("absent")).status().code(), StatusCode::kNotFound);
  ASSERT_OK(read("  tok  name=n resources=pods,deployments.apps namespaces=x,y\r\n"));
  auto grants = ReadTokenGrants(dir.Sub("t"));
  ASSERT_OK(grants);
  ASSERT_EQ(grants->size(), 1u);
  const TokenGrant& g = (*grants)[0];
  EXPECT_EQ(g.token, "tok");
  EXPECT_EQ(g.user, "n");
  EXPECT_FALSE(g.every_resource);
  EXPECT_EQ(g.resources, (std::set<std::string>{"deployments.apps", "pods"}));
  EXPECT_EQ(g.namespaces, (std::set<std::string>{"x", "y"}));
  EXPECT_EQ(FindGrant(*grants, "Bearer tok"), &g);
  EXPECT_EQ(FindGrant(*grants, "Bearer to"), nullptr);
  EXPECT_EQ(FindGrant(*grants, "tok"), nullptr);
}

}  // namespace
}  // namespace kcache::tool
