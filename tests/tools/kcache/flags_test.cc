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

}  // namespace
}  // namespace kcache::cli
