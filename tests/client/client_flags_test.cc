// SPDX-License-Identifier: Apache-2.0

// TakeClientFlags: kubectl's client flags taken out of a program's
// arguments, the rest left in order.

#include "kcache/client_flags.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kcache::testing {
namespace {

TEST(ClientFlagsTest, TakesTheClientFlagsInEitherSpellingAndLeavesTheRest) {
  std::vector<std::string> args = {
      "--cache", "/tmp/c", "--kubeconfig",   "/k",        "-n=prod", "--context=ctx",
      "pos",     "-s",     "https://h:6443", "--workers", "2"};
  auto o = TakeClientFlags(&args);
  ASSERT_OK(o) << o.status();
  EXPECT_EQ(o->path, "/k");
  EXPECT_EQ(o->context, "ctx");
  EXPECT_EQ(o->server, "https://h:6443");
  EXPECT_EQ(o->namespace_, "prod");
  EXPECT_EQ(args, (std::vector<std::string>{"--cache", "/tmp/c", "pos", "--workers", "2"}));
}

TEST(ClientFlagsTest, AFlagWithoutItsValueAndArgumentsAfterADoubleDash) {
  std::vector<std::string> args = {"--server"};
  auto o = TakeClientFlags(&args);
  EXPECT_TRUE(o.status().IsInvalidArgument());
  EXPECT_EQ(o.status().message(), "flag needs an argument: --server");
  args = {"--namespace", "a", "--", "--namespace", "b"};
  o = TakeClientFlags(&args);
  ASSERT_OK(o);
  EXPECT_EQ(o->namespace_, "a");
  EXPECT_EQ(args, (std::vector<std::string>{"--", "--namespace", "b"}));
}

TEST(ClientFlagsTest, RestConfigFromFlagsLoadsWhatTheyName) {
  std::vector<std::string> args = {"--server", "http://127.0.0.1:8080", "x"};
  auto config = RestConfigFromFlags(&args);
  ASSERT_OK(config) << config.status();
  EXPECT_EQ(config->server, "http://127.0.0.1:8080");
  EXPECT_EQ(args, std::vector<std::string>{"x"});
  args = {"--kubeconfig", "/nonexistent/kubeconfig"};
  EXPECT_FALSE(RestConfigFromFlags(&args).ok());
}

}  // namespace
}  // namespace kcache::testing
