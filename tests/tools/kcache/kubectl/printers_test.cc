// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/kubectl/printers.h"
#include "testing/status_matchers.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kcache::tool {
namespace {

TEST(PrintTableTest, AlignsByCharactersNotBytes) {
  std::ostringstream out;
  PrintTable({{"NAME", "AGE"}, {"└─Pod/a", "1s"}, {"Deployment/web", "2d"}}, out);
  EXPECT_EQ(out.str(), "NAME             AGE\n└─Pod/a          1s\nDeployment/web   2d\n");
}

}  // namespace
}  // namespace kcache::tool
