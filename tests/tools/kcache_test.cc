// Runs the kcache binary (path in $KCACHE_BIN) as a user would.

#include <gtest/gtest.h>

#include "testing/command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using Result = kcache::testing::CommandResult;

Result Kcache(const std::string& args) {
  const char* bin = std::getenv("KCACHE_BIN");
  if (!bin) {
    ADD_FAILURE() << "KCACHE_BIN is not set";
    return {-1, ""};
  }
  return kcache::testing::RunCommand(std::string(bin) + " " + args + " 2>&1");
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

TEST(KcacheToolTest, BenchServeReportsRatesAgainstTheLoopbackLimit) {
  Result r = Kcache("bench serve --pods 500 --events 500 --runs 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("serve: 500 pods"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("loopback limit"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LIST resourceVersion=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("WATCH burst"), std::string::npos) << r.output;
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
      {"serve --fault-cut x", "error: serve: invalid argument \"x\" for \"--fault-cut\" flag"},
      {"serve --fault-expire 0", "error: serve: invalid argument \"0\" for \"--fault-expire\" flag"},
      {"serve --listen 8080", "error: serve: listen address \"8080\" is not HOST:PORT"},
      {"serve --history 0", "error: serve: --history must be at least 1"},
      {"sync --cache /tmp/x", "error: sync: name at least one resource to sync"},
      {"sync pods", "error: sync: --cache DIR is required"},
      {"get", "error: get: name a resource type"},
      {"get pods --cache /tmp/x -o yaml", "error: get: unable to match a printer suitable for the output format \"yaml\""},
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

// Starts `kcache serve ARGS` with its output on a pipe; returns the pid and
// the first two lines (the second names the URL).
struct Serving {
  pid_t pid = -1;
  int out = -1;
  std::string banner;
};

Serving StartServe(const std::string& args) {
  Serving s;
  int fds[2];
  if (pipe(fds) != 0) return s;
  s.pid = fork();
  if (s.pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    std::string cmd = std::string(std::getenv("KCACHE_BIN")) + " serve " + args;
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  s.out = fds[0];
  char c;
  while (std::count(s.banner.begin(), s.banner.end(), '\n') < 2 && read(s.out, &c, 1) == 1) s.banner += c;
  return s;
}

std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(KcacheToolTest, ServeStopsCleanlyOnSigtermAndSigintWithAWatchOpen) {
  for (int sig : {SIGTERM, SIGINT}) {
    Serving s = StartServe("--listen 127.0.0.1:0 --pods 100");
    ASSERT_GT(s.pid, 0);
    size_t at = s.banner.find("serving on http://127.0.0.1:");
    ASSERT_NE(at, std::string::npos) << s.banner;
    int port = std::atoi(s.banner.c_str() + at + std::string("serving on http://127.0.0.1:").size());
    // A watch, open when the signal comes.
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string req = "GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    char buf[4096];
    ASSERT_GT(recv(fd, buf, sizeof buf, 0), 0) << "the watch started";
    kill(s.pid, sig);
    int status = 0;
    waitpid(s.pid, &status, 0);
    std::string rest = Drain(s.out);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << rest;
    EXPECT_NE(rest.find(sig == SIGTERM ? "SIGTERM, stopping" : "SIGINT, stopping"), std::string::npos) << rest;
    // The watch's connection has ended.
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
    }
    EXPECT_EQ(n, 0);
    close(fd);
  }
}

TEST(KcacheToolTest, ServeReportsAPortInUse) {
  Serving first = StartServe("--listen 127.0.0.1:0 --pods 0");
  size_t at = first.banner.find("serving on http://");
  ASSERT_NE(at, std::string::npos) << first.banner;
  std::string url = first.banner.substr(at + std::string("serving on http://").size());
  url = url.substr(0, url.find_first_of(" \n"));
  Result second = Kcache("serve --pods 0 --listen " + url);
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_NE(second.output.find("cannot listen on " + url), std::string::npos) << second.output;
  kill(first.pid, SIGTERM);
  waitpid(first.pid, nullptr, 0);
  Drain(first.out);
}

}  // namespace

namespace {

// `kcache sync` into a cache from `kcache serve`, until synced; then
// `kcache get` reads it back; a second sync resumes without a LIST. Errors
// name what is wrong: an unknown resource, object or cache.
TEST(KcacheToolTest, SyncThenGetThenResume) {
  Serving s = StartServe("--listen 127.0.0.1:0 --pods 300 --namespaces 3 --nodes 5 --creates 0 --updates 0 "
                         "--relabels 0 --deletes 0");
  size_t at = s.banner.find("http://");
  ASSERT_NE(at, std::string::npos) << s.banner;
  std::string url = s.banner.substr(at, s.banner.find_first_of(" \n", at) - at);
  char tmpl[] = "/tmp/kcache-tool-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string cache = std::string(tmpl) + "/cache";

  Result first = Kcache("sync pods nodes --server " + url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("pods: streaming list of 300 objects"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("nodes: synced at resourceVersion"), std::string::npos) << first.output;

  Result names = Kcache("get pods --cache " + cache + " -A -o name");
  ASSERT_EQ(names.exit_code, 0) << names.output;
  EXPECT_EQ(std::count(names.output.begin(), names.output.end(), '\n'), 300) << names.output;
  EXPECT_EQ(names.output.rfind("pod/", 0), 0u) << names.output;
  Result nodes = Kcache("get no --cache " + cache);
  EXPECT_NE(nodes.output.find("node-4"), std::string::npos) << nodes.output;
  Result one = Kcache("get node node-1 --cache " + cache + " -o json");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("\"kind\": \"Node\""), std::string::npos) << one.output;
  Result missing = Kcache("get node nope --cache " + cache);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("nodes \"nope\" not found"), std::string::npos) << missing.output;
  Result unknown = Kcache("get widgets --cache " + cache);
  EXPECT_NE(unknown.output.find("the cache has no resource type \"widgets\" (it has: nodes, pods)"),
            std::string::npos)
      << unknown.output;
  Result absent = Kcache("get pods --cache " + std::string(tmpl) + "/absent");
  EXPECT_EQ(absent.exit_code, 1);

  Result again = Kcache("sync pods nodes --server " + url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("pods: resuming the watch from resourceVersion"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("streaming list"), std::string::npos) << again.output;

  Result bad = Kcache("sync gizmos --server " + url + " --cache " + cache);
  EXPECT_NE(bad.output.find("the server doesn't have a resource type \"gizmos\""), std::string::npos)
      << bad.output;

  kill(s.pid, SIGTERM);
  int status;
  waitpid(s.pid, &status, 0);
  Drain(s.out);
  kcache::testing::RunCommand(std::string("rm -rf ") + tmpl);
}

}  // namespace
