// Runs the kcache binary (path in $KCACHE_BIN) as a user would.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/wait.h>

namespace {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr
};

Result Kcache(const std::string& args) {
  const char* bin = std::getenv("KCACHE_BIN");
  if (!bin) {
    ADD_FAILURE() << "KCACHE_BIN is not set";
    return {-1, ""};
  }
  std::string cmd = std::string(bin) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(KcacheToolTest, DemoLoadsQueriesAndRelists) {
  Result r = Kcache("demo --pods 2000 --namespaces 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("initial list: 2000 pods"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("namespaces: ns-0=500 ns-1=500 ns-2=500 ns-3=500"), std::string::npos)
      << r.output;
  // The relist changes, computed from the demo's churn rule independently:
  // 2020 pods exist after churn, i % 97 == 0 are gone (21, all below 2000),
  // the 20 new ones are added, and i % 31 == 0 (not deleted) changed (64).
  EXPECT_NE(r.output.find("20 added, 64 updated, 21 deleted"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1915 unchanged"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resume resourceVersion: 2000000"), std::string::npos) << r.output;
  // The persistent part: committed, reopened with the resume point, verified.
  EXPECT_NE(r.output.find("committed 1999 pods"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("with 1999 pods, resume point 2000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verify: every index entry"), std::string::npos) << r.output;
}

TEST(KcacheToolTest, BenchDecodeReportsEveryMethod) {
  Result r = Kcache("bench decode --objects 200 --runs 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nlohmann_json full parse"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kcache Object::Parse, drop managedFields"), std::string::npos);
  EXPECT_EQ(r.output.find("no work"), std::string::npos) << r.output;
}

TEST(KcacheToolTest, BadInputGetsAClearErrorAndExitCode2) {
  struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"demo --pods lots", "error: demo: invalid argument \"lots\" for \"--pods\" flag: not an integer"},
      {"demo --nope", "error: demo: unknown flag: --nope"},
      {"demo --pods 5", "error: demo: --pods must be at least 100"},
      {"demo extra", "error: demo: unexpected argument \"extra\""},
      {"bench", "error: bench: missing benchmark name"},
      {"bench fast", "error: bench: unknown benchmark \"fast\""},
      {"bench decode --objects", "error: bench decode: flag needs an argument: --objects"},
      {"frobnicate", "error: unknown command \"frobnicate\""},
  };
  for (const auto& c : cases) {
    Result r = Kcache(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(KcacheToolTest, HelpAndVersion) {
  Result help = Kcache("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("kcache demo"), std::string::npos);
  Result flags = Kcache("demo --help");
  EXPECT_EQ(flags.exit_code, 0);
  EXPECT_NE(flags.output.find("--pods int"), std::string::npos) << flags.output;
  Result version = Kcache("version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.output.substr(0, 7), "kcache ");
}

}  // namespace
