// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/scratch_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "testing/status_matchers.h"

namespace kcache::tool {
namespace {

namespace fs = std::filesystem;

TEST(ScratchDirTest, ANewDirectoryIsRemovedWithItsContents) {
  std::string path;
  {
    auto dir = ScratchDir::Create("kcache-scratch-test");
    ASSERT_OK(dir) << dir.status();
    path = (*dir)->path();
    EXPECT_TRUE(fs::is_directory(path));
    EXPECT_NE(path.find("kcache-scratch-test-"), std::string::npos);
    fs::create_directories(path + "/a/b");
    std::ofstream(path + "/a/b/file") << "x";
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(ScratchDirTest, ANamedDirectoryIsCreatedAndKept) {
  auto base = ScratchDir::Create("kcache-scratch-test");
  ASSERT_OK(base);
  const std::string named = (*base)->path() + "/kept/here";
  {
    auto dir = ScratchDir::Create("unused", named);
    ASSERT_OK(dir) << dir.status();
    EXPECT_EQ((*dir)->path(), named);
  }
  EXPECT_TRUE(fs::is_directory(named));
}

TEST(ScratchDirTest, AnUnusableTmpdirIsAnError) {
  const char* old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  setenv("TMPDIR", "/nonexistent/kcache", 1);
  auto dir = ScratchDir::Create("kcache-scratch-test");
  if (old) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("/nonexistent/kcache/kcache-scratch-test-"),
            std::string::npos)
      << dir.status();
}

}  // namespace
}  // namespace kcache::tool
