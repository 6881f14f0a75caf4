// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/flags.h"
#include "testing/status_matchers.h"

#include <gtest/gtest.h>

namespace kcache::cli {
namespace {

struct Parsed {
  std::string ns = "default";
  int64_t limit = 500;
  bool all = false;
  std::vector<std::string> positional;
  Status status;
};

Parsed ParseArgs(std::vector<std::string> args) {
  Parsed p;
  FlagSet f;
  f.String("namespace", 'n', &p.ns, "namespace");
  f.Int("limit", '\0', &p.limit, "page size");
  f.Bool("all-namespaces", 'A', &p.all, "all namespaces");
  p.status = f.Parse(args, &p.positional);
  return p;
}

TEST(FlagsTest, KubectlSpellings) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"-n", "x"}, {"-nx"}, {"-n=x"}, {"--namespace", "x"}, {"--namespace=x"}}) {
    Parsed p = ParseArgs(args);
    ASSERT_OK(p.status) << p.status;
    EXPECT_EQ(p.ns, "x");
  }
  Parsed p = ParseArgs({"get", "pods", "-A", "--limit=7", "name", "--", "-n"});
  ASSERT_OK(p.status);
  EXPECT_TRUE(p.all);
  EXPECT_EQ(p.limit, 7);
  EXPECT_EQ(p.ns, "default");
  EXPECT_EQ(p.positional, (std::vector<std::string>{"get", "pods", "name", "-n"}));
  EXPECT_FALSE(ParseArgs({"--all-namespaces=false"}).all);
}

TEST(FlagsTest, BadFlagsSayWhatIsWrong) {
  EXPECT_EQ(ParseArgs({"--nope"}).status.message(), "unknown flag: --nope");
  EXPECT_EQ(ParseArgs({"-z"}).status.message(), "unknown flag: -z");
  EXPECT_EQ(ParseArgs({"--limit"}).status.message(), "flag needs an argument: --limit");
  EXPECT_EQ(ParseArgs({"--limit", "ten"}).status.message(),
            "invalid argument \"ten\" for \"--limit\" flag: not an integer");
  EXPECT_EQ(ParseArgs({"-A=maybe"}).status.message(),
            "invalid argument \"maybe\" for \"-A\" flag: not a boolean (true or false)");
  EXPECT_TRUE(ParseArgs({"--limit=1x"}).status.IsInvalidArgument());
}

TEST(FlagsTest, UsageListsDefaults) {
  std::string ns = "default";
  int64_t n = 3;
  FlagSet f;
  f.String("namespace", 'n', &ns, "the namespace");
  f.Int("objects", '\0', &n, "how many");
  std::string usage = f.Usage();
  EXPECT_NE(usage.find("-n, --namespace string"), std::string::npos) << usage;
  EXPECT_NE(usage.find("the namespace (default \"default\")"), std::string::npos) << usage;
  EXPECT_NE(usage.find("--objects int"), std::string::npos) << usage;
  EXPECT_NE(usage.find("how many (default 3)"), std::string::npos) << usage;
}

TEST(FlagsTest, IntsAndIntListsKeepTheirRange) {
  int runs = 5;
  std::vector<int> sizes = {10, 100};
  FlagSet f;
  f.Int("runs", '\0', &runs, "runs");
  f.IntSlice("objects", '\0', &sizes, "sizes");
  std::vector<std::string> positional;
  EXPECT_NE(f.Usage().find("(default 10,100)"), std::string::npos) << f.Usage();
  ASSERT_OK(f.Parse({"--runs=7", "--objects", "1,2", "--objects=3"}, &positional));
  EXPECT_EQ(runs, 7);
  EXPECT_EQ(sizes, (std::vector<int>{1, 2, 3}));  // the first use replaces the default
  EXPECT_EQ(f.Parse({"--runs=9999999999"}, &positional).message(),
            "invalid argument \"9999999999\" for \"--runs\" flag: out of range");
  EXPECT_EQ(f.Parse({"--objects=1,x"}, &positional).message(),
            "invalid argument \"1,x\" for \"--objects\" flag: not a list of integers");
}

TEST(FlagsTest, DurationsAsKubectlTakesThem) {
  using std::chrono::milliseconds;
  EXPECT_EQ(ParseDuration("0").value(), milliseconds(0));
  EXPECT_EQ(ParseDuration("30").value(), milliseconds(30000));
  EXPECT_EQ(ParseDuration("500ms").value(), milliseconds(500));
  EXPECT_EQ(ParseDuration("1m30s").value(), milliseconds(90000));
  EXPECT_EQ(ParseDuration("1.5h").value(), milliseconds(5400000));
  // Each is an error that names the flag, never an exception.
  for (const char* bad :
       {"", "soon", ".s", "..", "5x", "s", "99999999999999999999", "99999999999999999999h"}) {
    StatusOr<milliseconds> d = ParseDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find("--request-timeout"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace kcache::cli
