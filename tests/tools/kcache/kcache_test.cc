// SPDX-License-Identifier: Apache-2.0

// Runs the kcache binary (path in $KCACHE_BIN) as a user would.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kcache/version.h"
#include "testing/command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

namespace {

using Result = kcache::testing::CommandResult;

Result Kcache(const std::string& args) {
  return kcache::testing::RunCommand(kcache::testing::KcacheBin() + " " + args + " 2>&1");
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

TEST(KcacheToolTest, BenchIngestReportsTheRatioToRawRocksDb) {
  char tmpl[] = "/tmp/kcache-tool-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string jsonl = std::string(tmpl) + "/ingest.jsonl";
  Result r = Kcache("bench ingest --pods 300 --runs 2 --label-index-cost --jsonl " + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // One JSON line per run, for tools/bench/plot.
  FILE* f = std::fopen(jsonl.c_str(), "r");
  ASSERT_NE(f, nullptr) << jsonl;
  char buf[1024];
  int lines = 0;
  while (std::fgets(buf, sizeof buf, f)) {
    nlohmann::json row = nlohmann::json::parse(buf);
    EXPECT_EQ(row["bench"], "ingest");
    EXPECT_EQ(row["pods"], 300);
    EXPECT_EQ(row["run"], lines);
    EXPECT_EQ(row["objects"], 300);
    EXPECT_GT(row["bytes"].get<double>(), 300 * 1000);
    EXPECT_GT(row["kcache_s"].get<double>(), 0);
    EXPECT_GT(row["raw_s"].get<double>(), 0);
    ASSERT_TRUE(row.contains("kcache_cpu_s")) << row.dump();
    EXPECT_GE(row["kcache_cpu_s"].get<double>(), 0);  // clock ticks: may round to 0
    EXPECT_GT(row["no_label_index_s"].get<double>(), 0);
    ++lines;
  }
  std::fclose(f);
  EXPECT_EQ(lines, 2);
  std::filesystem::remove_all(tmpl);

  EXPECT_NE(r.output.find("ingest: kcache serve with 300 pods"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("run 1: kcache sync"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("raw RocksDB batched puts of the same bytes"), std::string::npos);
  EXPECT_NE(r.output.find("kcache: list+watch from kcache serve, synced"), std::string::npos);
  EXPECT_NE(r.output.find("CPU seconds by thread"), std::string::npos) << r.output;
  EXPECT_TRUE(
      std::regex_search(r.output, std::regex("CPU bound: [0-9.]+ CPU us/pod in all, [0-9]+% "
                                             "of [0-9]+ cores busy")))
      << r.output;
  EXPECT_NE(r.output.find("without the label index"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("label index: "), std::string::npos) << r.output;

  // A file it cannot open fails before the cluster is loaded.
  Result bad = Kcache("bench ingest --pods 1 --jsonl /nonexistent/x.jsonl");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("error: bench ingest: open /nonexistent/x.jsonl: No such file or "
                            "directory"),
            std::string::npos)
      << bad.output;
}

TEST(KcacheToolTest, BenchSnapshotReportsRatiosAndOpenToFirstGet) {
  Result r = Kcache("bench snapshot --objects 500 --runs 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cache: 500 pods loaded"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("snapshot of 500 pods:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("disk sequential write (fdatasync)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("snapshot export"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("snapshot import"), std::string::npos) << r.output;
  // The whole `kcache get` process ran against the bench's cache (it fails
  // the bench if it cannot find the object).
  EXPECT_NE(r.output.find("kcache get pods NAME, whole process"), std::string::npos) << r.output;
}

TEST(KcacheToolTest, BadInputGetsAClearErrorAndExitCode2) {
  struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"demo --pods lots",
       "error: demo: invalid argument \"lots\" for \"--pods\" flag: not an integer"},
      {"demo --nope", "error: demo: unknown flag: --nope"},
      {"demo --pods 5", "error: demo: --pods must be at least 100"},
      {"demo extra", "error: demo: unexpected argument \"extra\""},
      {"bench", "error: bench: missing benchmark name"},
      {"bench fast", "error: bench: unknown benchmark \"fast\""},
      {"bench decode --objects", "error: bench decode: flag needs an argument: --objects"},
      {"bench snapshot --objects 0",
       "error: bench snapshot: --objects and --runs must be positive"},
      {"bench ingest --label-index=false --label-index-cost",
       "error: bench ingest: --label-index-cost needs the label index on"},
      {"bench ingest --pods 0",
       "error: bench ingest: --pods and --runs must be positive, --object-bytes and "
       "--read-ahead-bytes not negative"},
      {"frobnicate", "error: unknown command \"frobnicate\""},
      {"serve --fault-cut x", "error: serve: invalid argument \"x\" for \"--fault-cut\" flag"},
      {"serve --fault-expire 0",
       "error: serve: invalid argument \"0\" for \"--fault-expire\" flag"},
      {"serve --listen 8080", "error: serve: listen address \"8080\" is not HOST:PORT"},
      {"serve --history 0", "error: serve: --history must be at least 1"},
      {"serve --cache /tmp/x --pods 5",
       "error: serve: --pods applies to the synthetic cluster, not to --cache"},
      {"serve --token-file t", "error: serve: --token-file applies to --cache and --snapshot only"},
      {"serve --snapshot /tmp/x.kcs --creates 5",
       "error: serve: --creates applies to the synthetic cluster, not to --snapshot"},
      {"serve --cache /tmp/x --snapshot /tmp/x.kcs",
       "error: serve: --cache and --snapshot exclude each other"},
      {"serve --cache /tmp/x --listen 0.0.0.0:80",
       "error: serve: --listen 0.0.0.0:80: kcache serve listens on loopback addresses "
       "(127.0.0.1, ::1, localhost) unless it serves TLS"},
      {"serve --cache /tmp/x --tls-cert-file c",
       "error: serve: --tls-cert-file and --tls-private-key-file go together"},
      {"serve --tls-cert-file c",
       "error: serve: --tls-cert-file applies to --cache and --snapshot only"},
      {"sync --cache /tmp/x", "error: sync: name at least one resource to sync"},
      {"sync pods", "error: sync: --cache DIR is required"},
      {"stats", "error: stats: name what to read"},
      {"tree pods", "error: tree: name a resource type and an object"},
      {"diff a", "error: diff: name two caches or snapshot files"},
      {"snapshot", "error: snapshot: name a snapshot command: create, export, import, verify"},
      {"snapshot frobnicate", "error: snapshot: unknown snapshot command \"frobnicate\""},
      {"snapshot export --cache /tmp/x", "error: snapshot export: name the file to write"},
      {"snapshot export --cache /tmp/x f --zstd-level 40",
       "error: snapshot export: --zstd-level must be between 1 and 19"},
      {"snapshot import f", "error: snapshot import: --cache DIR is required"},
      {"snapshot verify", "error: snapshot verify: name the snapshot file"},
      {"snapshot verify a b", "error: snapshot verify: unexpected argument \"b\""},
      {"snapshot create --cache /tmp/x", "error: snapshot create: name the directory to create"},
  };
  for (const auto& c : cases) {
    Result r = Kcache(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

// kcache get fails as kubectl get does: "error: ..." and exit code 1, and
// checks its flags before it opens anything.
TEST(KcacheToolTest, GetErrorsAsKubectl) {
  struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"get --cache /tmp/no-such-cache", "error: you must specify the type of resource to get"},
      {"get pods --cache /tmp/no-such-cache -o xml",
       "error: unable to match a printer suitable for the output format \"xml\""},
      {"get pods --cache /tmp/no-such-cache -o go-template={{.x",
       "error: error parsing template {{.x, template: output:1: unclosed action"},
      {"get pods --cache /tmp/no-such-cache -o go-template",
       "error: template format specified but no template given"},
      {"get pods --cache /tmp/no-such-cache -o jsonpath={.a",
       "error: error parsing jsonpath {.a, unclosed action"},
      {"get pods --cache /tmp/no-such-cache -o custom-columns=NAME",
       "error: unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"},
      {"get pods", "error: name what to read: --cache DIR or --snapshot FILE"},
      {"get pods --cache a --snapshot b", "error: --cache and --snapshot exclude each other"},
      {"get pods --cache /tmp/no-such-cache --sort-by {.a[x]}", "error: invalid array index x"},
      {"get pods --cache /tmp/no-such-cache --index app", "error: --index wants INDEX=VALUE"},
      {"get pods --cache /tmp/no-such-cache -l 'a in (b'", "error: "},
      {"get pods --nope", "error: unknown flag: --nope"},
      {"get pods --cache /tmp/no-such-cache --output-watch-events",
       "error: --output-watch-events option can only be used with --watch or --watch-only"},
      {"get pods --cache /tmp/no-such-cache --resource-version=5",
       "error: --resource-version can only be used with --watch"},
      {"get pods -w --snapshot /tmp/no-such.kcs",
       "error: --watch follows a cache directory as a sync writes it"},
      {"get pods -w --cache /tmp/no-such-cache --request-timeout=soon",
       "error: invalid argument \"soon\" for \"--request-timeout\""},
  };
  for (const auto& c : cases) {
    Result r = Kcache(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("error: get:"), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(KcacheToolTest, HelpAndVersion) {
  Result help = Kcache("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("kcache demo"), std::string::npos);
  Result flags = Kcache("demo --help");
  EXPECT_EQ(flags.exit_code, 0);
  EXPECT_NE(flags.output.find("--pods int"), std::string::npos) << flags.output;
  // Every command and sub-command explains its arguments with examples.
  for (const char* command :
       {"demo", "sync", "get", "stats", "tree", "diff", "serve", "snapshot create",
        "snapshot export", "snapshot import", "snapshot verify", "bench decode", "bench get",
        "bench serve", "bench snapshot", "bench store", "version"}) {
    for (const std::string& form :
         {std::string("help ") + command, std::string(command) + " --help"}) {
      Result r = Kcache(form);
      EXPECT_EQ(r.exit_code, 0) << form << "\n" << r.output;
      EXPECT_NE(r.output.find("Usage:\n  kcache " + std::string(command)), std::string::npos)
          << form << "\n"
          << r.output;
      EXPECT_NE(r.output.find("Examples:\n  "), std::string::npos) << form << "\n" << r.output;
      EXPECT_NE(r.output.find("Flags:\n"), std::string::npos) << form << "\n" << r.output;
    }
  }
  Result group = Kcache("snapshot --help");
  EXPECT_EQ(group.exit_code, 0) << group.output;
  EXPECT_NE(group.output.find("snapshot (create | export | import | verify)"), std::string::npos)
      << group.output;
  EXPECT_NE(Kcache("help get").output.find("TYPE[.GROUP]/NAME"), std::string::npos);
  EXPECT_NE(Kcache("help snapshot export").output.find("--zstd-level"), std::string::npos);
  EXPECT_EQ(Kcache("help frobnicate").exit_code, 2);
}

// kcache version: this build's release and formats, as the library reports
// them; --version is the same; -o json and yaml carry the same fields.
TEST(KcacheToolTest, VersionTellsTheBuildAndTheFormatsItReadsAndWrites) {
  const kcache::LibraryVersion lib = kcache::GetLibraryVersion();
  Result version = Kcache("version");
  ASSERT_EQ(version.exit_code, 0) << version.output;
  EXPECT_EQ(version.output,
            "kcache Version: " + std::string(lib.version) + "\nLibrary Version: " + lib.version +
                "\nCache Format: " + std::to_string(lib.cache_format) + " (opens 1 to " +
                std::to_string(lib.cache_format) +
                ")\nSnapshot Format: " + std::to_string(lib.snapshot_format) + "\n");
  EXPECT_EQ(Kcache("--version").output, version.output);
  Result help = Kcache("help version");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("Usage:\n  kcache version"), std::string::npos) << help.output;
  Result json = Kcache("version -o json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  nlohmann::json doc = nlohmann::json::parse(json.output);
  EXPECT_EQ(doc["libraryVersion"], lib.version);
  EXPECT_EQ(doc["cacheFormat"]["writes"], lib.cache_format);
  EXPECT_EQ(doc["snapshotFormat"], lib.snapshot_format);
  EXPECT_FALSE(doc.contains("recorded"));
  Result yaml = Kcache("version -o yaml");
  ASSERT_EQ(yaml.exit_code, 0) << yaml.output;
  EXPECT_NE(yaml.output.find("libraryVersion: " + std::string(lib.version) + "\n"),
            std::string::npos)
      << yaml.output;
  Result bad = Kcache("version -o xml");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output, "error: version: --output must be 'yaml' or 'json'\n");
  Result missing = Kcache("version --snapshot /nonexistent/x.kcs");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent/x.kcs"), std::string::npos) << missing.output;
}

using kcache::testing::Drain;
using kcache::testing::ServeProcess;
using kcache::testing::StartServe;
using kcache::testing::Stop;

TEST(KcacheToolTest, ServeStopsCleanlyOnSigtermAndSigintWithAWatchOpen) {
  for (int sig : {SIGTERM, SIGINT}) {
    ServeProcess s = StartServe("--listen 127.0.0.1:0 --pods 100");
    ASSERT_GT(s.process.pid, 0);
    size_t at = s.banner.find("serving on http://127.0.0.1:");
    ASSERT_NE(at, std::string::npos) << s.banner;
    int port =
        std::atoi(s.banner.c_str() + at + std::string("serving on http://127.0.0.1:").size());
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
    const int pid = std::exchange(s.process.pid, -1);  // stopped here, not by s
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    std::string rest = Drain(std::exchange(s.process.out, -1));
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << rest;
    EXPECT_NE(rest.find(sig == SIGTERM ? "SIGTERM, stopping" : "SIGINT, stopping"),
              std::string::npos)
        << rest;
    // The watch's connection has ended.
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
    }
    EXPECT_EQ(n, 0);
    close(fd);
  }
}

TEST(KcacheToolTest, ServeReportsAPortInUse) {
  ServeProcess first = StartServe("--listen 127.0.0.1:0 --pods 0");
  ASSERT_NE(first.banner.find("serving on http://"), std::string::npos) << first.banner;
  const std::string url = first.listen();
  Result second = Kcache("serve --pods 0 --listen " + url);
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_NE(second.output.find("cannot listen on " + url), std::string::npos) << second.output;
  Stop(first.process, SIGTERM);
}

}  // namespace

namespace {

// `kcache sync` into a cache from `kcache serve`, until synced; then
// `kcache get` reads it back; a second sync resumes without a LIST. Errors
// name what is wrong: an unknown resource, object or cache.
TEST(KcacheToolTest, SyncThenGetThenResume) {
  ServeProcess s = StartServe(
      "--listen 127.0.0.1:0 --pods 300 --namespaces 3 --nodes 5 --creates 0 --updates 0 "
      "--relabels 0 --deletes 0");
  const std::string url = s.url;
  ASSERT_FALSE(url.empty()) << s.banner;
  char tmpl[] = "/tmp/kcache-tool-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string cache = std::string(tmpl) + "/cache";

  Result first =
      Kcache("sync pods nodes --server " + url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("pods: streaming list of 300 objects"), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("nodes: synced at resourceVersion"), std::string::npos)
      << first.output;
  // The account of its memory: the parts add up to the resident size, and
  // the objects just written are in the memtables.
  std::smatch mem;
  ASSERT_TRUE(std::regex_search(
      first.output, mem,
      std::regex("memory at the highest resident size sampled: ([0-9.]+) MB = block cache "
                 "([0-9.]+) MB \\+ memtables ([0-9.]+) MB \\+ table readers ([0-9.]+) MB \\+ "
                 "the rest ([0-9.]+) MB; peak resident size ([0-9.]+) MB")))
      << first.output;
  const double resident = std::stod(mem[1]);
  EXPECT_GT(resident, 10.0) << mem[0];
  EXPECT_GT(std::stod(mem[3]), 0.0) << mem[0];
  EXPECT_NEAR(std::stod(mem[2]) + std::stod(mem[3]) + std::stod(mem[4]) + std::stod(mem[5]),
              resident, 0.3)
      << mem[0];
  // The kernel's peak counts every sample and what came between them (its
  // counters are kept per thread and summed lazily: a few pages apart).
  EXPECT_GE(std::stod(mem[6]), resident * 0.95) << mem[0];

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
  EXPECT_NE(unknown.output.find("has no resource type \"widgets\" (it has: nodes, pods)"),
            std::string::npos)
      << unknown.output;
  Result absent = Kcache("get pods --cache " + std::string(tmpl) + "/absent");
  EXPECT_EQ(absent.exit_code, 1);

  // "po,nodes": one argument naming two resources, as kubectl takes them.
  Result again = Kcache("sync po,nodes --server " + url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("pods: resuming the watch from resourceVersion"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("nodes: resuming the watch from resourceVersion"), std::string::npos)
      << again.output;
  Result empty_name = Kcache("sync pods,,nodes --server " + url + " --cache " + cache);
  EXPECT_EQ(empty_name.exit_code, 2) << empty_name.output;
  EXPECT_NE(empty_name.output.find("resource list \"pods,,nodes\" has an empty name"),
            std::string::npos)
      << empty_name.output;
  EXPECT_EQ(again.output.find("streaming list"), std::string::npos) << again.output;

  // --log-format=json: every line one JSON object with a time and a
  // message, ending with the summary.
  Result json_log = Kcache("sync pods nodes --server " + url + " --cache " + cache +
                           " --until-synced --log-format=json");
  ASSERT_EQ(json_log.exit_code, 0) << json_log.output;
  std::istringstream lines(json_log.output);
  std::string last;
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    EXPECT_TRUE(j.contains("time") && j.contains("msg")) << line;
    last = j.value("msg", "");
  }
  EXPECT_NE(last.find("summary: 2 resource(s), "), std::string::npos) << json_log.output;

  // --metrics-listen serves the informers' metrics in the Prometheus text
  // format while the sync runs.
  kcache::testing::CommandResult scraped = kcache::testing::RunCommand(
      "log=" + std::string(tmpl) + "/metrics.log; " + kcache::testing::KcacheBin() +
      " sync pods --server " + url + " --cache " + cache +
      " --metrics-listen 127.0.0.1:0 2>$log & p=$!; " +
      "for i in $(seq 200); do grep -q 'pods: synced' $log && grep -q 'metrics on' $log && break; "
      "sleep 0.05; done; "
      R"(m=$(sed -n 's/.*serving metrics on \(http[^ ]*\).*/\1/p' $log); )"
      R"(curl -sS "$m"; curl -s -o /dev/null -w '%{http_code}\n' "${m%/metrics}/other"; )"
      "kill $p; wait $p");
  EXPECT_EQ(scraped.exit_code, 0) << scraped.output;
  for (const char* line :
       {"# TYPE kcache_informer_synced gauge", "kcache_informer_synced{resource=\"pods\"} 1",
        "# TYPE kcache_reflector_watches_total counter",
        "kcache_reflector_lists_total{resource=\"pods\"} ",
        "# TYPE kcache_reflector_listed_bytes_total counter",
        "kcache_informer_store_resource_version{resource=\"pods\"} ",
        "kcache_informer_seconds_since_last_sync{resource=\"pods\"} "}) {
    EXPECT_NE(scraped.output.find(line), std::string::npos) << line << "\n" << scraped.output;
  }
  EXPECT_NE(scraped.output.find("\n404\n"), std::string::npos) << scraped.output;

  // A selector the server would refuse is refused before anything opens; one
  // the server refuses (400) ends the sync, the committed cache untouched and
  // its resume point kept (invariant 6: bad input loses nothing), instead of
  // being retried forever.
  Result bad_labels = Kcache("sync pods --server " + url + " --cache " + cache + " -l 'a in (b'");
  EXPECT_EQ(bad_labels.exit_code, 2) << bad_labels.output;
  EXPECT_NE(bad_labels.output.find("error: sync: -l a in (b: "), std::string::npos)
      << bad_labels.output;
  Result bad_field = Kcache("sync pods --server " + url + " --cache " + cache +
                            " --field-selector spec.bogus=x --until-synced");
  EXPECT_NE(bad_field.exit_code, 0) << bad_field.output;
  EXPECT_NE(bad_field.output.find("field label not supported: spec.bogus"), std::string::npos)
      << bad_field.output;
  EXPECT_NE(bad_field.output.find("stopping: the error above does not go away by retrying"),
            std::string::npos)
      << bad_field.output;
  // Said once in the log, once as the command's own failure.
  EXPECT_NE(bad_field.output.find("error: LIST /api/v1/pods?fieldSelector="), std::string::npos)
      << bad_field.output;
  size_t said = 0;
  for (size_t pos = 0;
       (pos = bad_field.output.find("field label not supported", pos)) != std::string::npos;
       ++pos) {
    ++said;
  }
  EXPECT_EQ(said, 2u) << bad_field.output;
  Result kept = Kcache("get pods --cache " + cache + " -A -o name");
  EXPECT_EQ(std::count(kept.output.begin(), kept.output.end(), '\n'), 300) << kept.output;

  Result bad = Kcache("sync gizmos --server " + url + " --cache " + cache);
  EXPECT_NE(bad.output.find("the server doesn't have a resource type \"gizmos\""),
            std::string::npos)
      << bad.output;

  Stop(s.process, SIGTERM);
  kcache::testing::RunCommand(std::string("rm -rf ") + tmpl);
}

}  // namespace

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace {

// Another cluster at the same address (a cluster rebuilt behind the same
// URL): the cache's recorded identity, the kube-system namespace's uid,
// differs from the server's, so its resume points mean nothing there. The
// sync lists every resource again instead of resuming; it refuses when the
// cache holds resources it does not name, which would stay stale; once
// synced, the new identity is recorded and the next sync resumes.
// The metrics listener's probes: /healthz answers while the process
// serves; /readyz once every resource has synced, and not once the server
// has been unreachable for longer than --unready-after (?verbose names each
// resource's state, as kube-apiserver's /readyz does).
TEST(KcacheToolTest, SyncProbesAreReadyOnceSyncedAndNotWhileTheServerIsGone) {
  char tmpl[] = "/tmp/kcache-tool-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string bin = kcache::testing::KcacheBin();
  kcache::testing::CommandResult r = kcache::testing::RunCommand(
      "d=" + dir + "; " + bin +
      " serve --listen 127.0.0.1:0 --pods 10 >$d/serve.log 2>&1 & sp=$!; " +
      "for i in $(seq 600); do grep -q 'serving on' $d/serve.log && break; sleep 0.05; done; " +
      R"sh(u=$(sed -n 's/.*serving on \(http:[^ ]*\).*/\1/p' $d/serve.log | head -1); )sh" + bin +
      " sync pods --server $u --cache $d/c --metrics-listen 127.0.0.1:0 --unready-after 1s "
      "2>$d/sync.log & p=$!; "
      "for i in $(seq 600); do grep -q 'pods: synced' $d/sync.log && grep -q 'metrics on' "
      "$d/sync.log && break; sleep 0.05; done; " +
      R"sh(m=$(sed -n 's/.*serving metrics on \(http[^ ]*\).*/\1/p' $d/sync.log); b=${m%/metrics}; )sh"
      R"sh(echo "healthz: $(curl -s -w ' %{http_code}' $b/healthz)"; )sh"
      R"sh(echo "ready: $(curl -s -w ' %{http_code}' $b/readyz)"; )sh"
      R"sh(echo "verbose: $(curl -s -w ' %{http_code}' "$b/readyz?verbose")"; )sh"
      "kill $sp; wait $sp; "
      R"sh(for i in $(seq 300); do [ "$(curl -s -o /dev/null -w '%{http_code}' $b/readyz)" = 503 ] )sh"
      "&& break; sleep 0.1; done; "
      R"sh(echo "gone: $(curl -s -w ' %{http_code}' "$b/readyz")"; )sh"
      R"sh(echo "livez: $(curl -s -w ' %{http_code}' $b/livez)"; )sh"
      "kill $p; wait $p; rm -rf $d");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* want :
       {"healthz: ok 200\n", "ready: ok 200\n", "verbose: [+]pods ok\nreadyz check passed\n 200\n",
        "gone: [-]pods failing for ", "readyz check failed\n 503\n", "livez: ok 200\n"}) {
    EXPECT_NE(r.output.find(want), std::string::npos) << want << "\n" << r.output;
  }
}

TEST(KcacheToolTest, SyncOfAnotherClusterAtTheSameAddressListsAgain) {
  ServeProcess a = StartServe(
      "--listen 127.0.0.1:0 --seed 1 --pods 300 --nodes 5 --creates 0 "
      "--updates 0 --relabels 0 --deletes 0");
  ASSERT_GT(a.process.pid, 0);
  const std::string url = a.url;
  char tmpl[] = "/tmp/kcache-tool-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string cache = std::string(tmpl) + "/cache";
  Result first =
      Kcache("sync pods nodes --server " + url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  Stop(a.process, SIGTERM);

  // Seed 2 at the same address: 100 pods of other names, another identity.
  ServeProcess b = StartServe("--listen " + url.substr(std::string("http://").size()) +
                              " --seed 2 --pods 100 --nodes 5 --creates 0 --updates 0 --relabels 0 "
                              "--deletes 0");
  ASSERT_GT(b.process.pid, 0);
  ASSERT_EQ(b.url, url) << b.banner;
  Result partial = Kcache("sync pods --server " + url + " --cache " + cache + " --until-synced");
  EXPECT_EQ(partial.exit_code, 1) << partial.output;
  EXPECT_NE(partial.output.find("is not the cluster this cache was synced from"), std::string::npos)
      << partial.output;
  EXPECT_NE(partial.output.find("the cache also holds nodes, which this sync would leave stale"),
            std::string::npos)
      << partial.output;

  Result other =
      Kcache("sync pods nodes --server " + url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_NE(other.output.find("listing every resource again"), std::string::npos) << other.output;
  EXPECT_EQ(other.output.find("resuming the watch"), std::string::npos) << other.output;
  Result names = Kcache("get pods --cache " + cache + " -A -o name");
  EXPECT_EQ(std::count(names.output.begin(), names.output.end(), '\n'), 100) << names.output;

  Result again =
      Kcache("sync pods nodes --server " + url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("is not the cluster"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("pods: resuming the watch"), std::string::npos) << again.output;

  Stop(b.process, SIGTERM);
  kcache::testing::RunCommand(std::string("rm -rf ") + tmpl);
}

// A full disk (issue: a small tmpfs, in a private mount namespace so that
// nothing outlives the test): the sync stops with an error naming the
// cause and exit code 1, never an abort inside RocksDB; every change
// committed before the error is there when the cache is reopened, and once
// space returns the next sync completes. A snapshot import into a full disk
// fails the same way and leaves no working directory behind.
TEST(KcacheToolTest, DiskFullStopsCleanlyAndLosesNothingCommitted) {
  ServeProcess s = StartServe(
      "--listen 127.0.0.1:0 --pods 3000 --creates 0 --updates 0 --relabels 0 "
      "--deletes 0");
  ASSERT_GT(s.process.pid, 0);
  const std::string url = s.url;
  char tmpl[] = "/tmp/kcache-tool-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, k = kcache::testing::KcacheBin();
  ASSERT_EQ(
      Kcache("sync pods --server " + url + " --cache " + dir + "/whole --until-synced").exit_code,
      0);
  ASSERT_EQ(Kcache("snapshot export --cache " + dir + "/whole " + dir + "/pods.kcs").exit_code, 0);
  const std::string script =
      "set -u; d=" + dir + "/disk; mkdir $d; mount -t tmpfs -o size=12m tmpfs $d || exit 99; " + k +
      " sync pods --server " + url + " --cache $d/c --until-synced > " + dir +
      "/sync1 2>&1; echo \"sync1=$?\"; " + "echo \"committed=$(" + k +
      " get pods -A -o name --cache $d/c | wc -l)\"; " + "mount -o remount,size=64m $d; " + k +
      " sync pods --server " + url +
      " --cache $d/c --until-synced > /dev/null 2>&1; echo \"sync2=$?\"; " + "echo \"after=$(" + k +
      " get pods -A -o name --cache $d/c | wc -l)\"; " +
      "rm -rf $d/c; mount -o remount,size=2m $d || exit 98; " + k + " snapshot import " + dir +
      "/pods.kcs --cache $d/imp > " + dir + "/import1 2>&1; echo \"import1=$?\"; " +
      "echo \"left=$(ls -A $d | wc -l)\"; " + "mount -o remount,size=64m $d; " + k +
      " snapshot import " + dir +
      "/pods.kcs --cache $d/imp > /dev/null 2>&1; echo \"import2=$?\"; " + "echo \"imported=$(" +
      k + " get pods -A -o name --cache $d/imp | wc -l)\"";
  Result r = kcache::testing::RunCommand("unshare --mount --propagation private sh -c '" + script +
                                         "' 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto value = [&](const std::string& name) {
    size_t at = r.output.find(name + "=");
    if (at == std::string::npos) return std::string("?");
    at += name.size() + 1;
    return r.output.substr(at, r.output.find('\n', at) - at);
  };
  std::string log1 = kcache::testing::RunCommand("cat " + dir + "/sync1").output;
  EXPECT_EQ(value("sync1"), "1") << r.output << log1;
  EXPECT_NE(log1.find("No space left on device"), std::string::npos) << log1;
  EXPECT_NE(log1.find("stopped after an error; what was committed before it is kept"),
            std::string::npos)
      << log1;
  // The summary's count is what the reopened cache holds.
  const int committed = std::atoi(value("committed").c_str());
  EXPECT_GT(committed, 0) << r.output;
  EXPECT_LT(committed, 3000) << r.output;
  EXPECT_NE(log1.find("summary: 1 resource(s), " + std::to_string(committed) + " objects"),
            std::string::npos)
      << log1;
  EXPECT_EQ(value("sync2"), "0") << r.output;
  EXPECT_EQ(value("after"), "3000") << r.output;
  std::string import1 = kcache::testing::RunCommand("cat " + dir + "/import1").output;
  EXPECT_EQ(value("import1"), "1") << r.output << import1;
  EXPECT_NE(import1.find("No space left on device"), std::string::npos) << import1;
  EXPECT_EQ(value("left"), "0") << r.output;
  EXPECT_EQ(value("import2"), "0") << r.output;
  EXPECT_EQ(value("imported"), "3000") << r.output;

  Stop(s.process, SIGTERM);
  kcache::testing::RunCommand("rm -rf " + dir);
}

// The snapshot commands and the inspection commands over what `kcache sync`
// wrote: export while a sync runs, verify, import, then get, stats and diff
// over the cache, the file and the import; damaged files and occupied
// targets are refused with exit code 1 and say where.
TEST(KcacheToolTest, SnapshotsRoundTripAndInspect) {
  ServeProcess s = StartServe(
      "--listen 127.0.0.1:0 --pods 300 --namespaces 3 --nodes 5 --creates 0 --updates 0 "
      "--relabels 0 --deletes 0");
  char tmpl[] = "/tmp/kcache-snap-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, cache = dir + "/cache", file = dir + "/s.kcs",
                    restored = dir + "/restored";
  ASSERT_EQ(Kcache("sync pods nodes --server " + s.url + " --cache " + cache + " --until-synced")
                .exit_code,
            0);

  Result exported = Kcache("snapshot export --cache " + cache + " " + file);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("pods       Pod    300"), std::string::npos) << exported.output;
  EXPECT_NE(exported.output.find("cluster " + s.url), std::string::npos) << exported.output;
  Result verified = Kcache("snapshot verify " + file);
  ASSERT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_NE(verified.output.find(": OK"), std::string::npos) << verified.output;
  Result imported = Kcache("snapshot import " + file + " --cache " + restored);
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  Result again = Kcache("snapshot import " + file + " --cache " + restored);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.output.find("already exists and is not an empty directory"), std::string::npos)
      << again.output;
  Result created = Kcache("snapshot create --cache " + cache + " " + dir + "/copy");
  ASSERT_EQ(created.exit_code, 0) << created.output;

  // get over the file reads what get over the cache reads, in every format.
  for (const char* format : {"json", "yaml", "name", "wide"}) {
    SCOPED_TRACE(format);
    Result a = Kcache(std::string("get pods -A -o ") + format + " --cache " + cache);
    Result b = Kcache(std::string("get pods -A -o ") + format + " --snapshot " + file);
    Result c = Kcache(std::string("get pods -A -o ") + format + " --cache " + dir + "/copy");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.output, b.output);
    EXPECT_EQ(a.output, c.output);
  }
  Result yaml = Kcache("get pods -n ns-1 -o yaml --snapshot " + file);
  EXPECT_EQ(yaml.output.rfind("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n", 0), 0u)
      << yaml.output;
  EXPECT_NE(yaml.output.find("\nkind: List\nmetadata:\n  resourceVersion: \"\"\n"),
            std::string::npos);
  Result wide = Kcache("get pods -n ns-1 -o wide --cache " + cache);
  EXPECT_EQ(wide.output.rfind("NAME", 0), 0u) << wide.output;
  EXPECT_NE(wide.output.find("READY   STATUS"), std::string::npos) << wide.output;
  EXPECT_NE(wide.output.find("IP"), std::string::npos) << wide.output;
  EXPECT_NE(wide.output.find("node-"), std::string::npos) << wide.output;

  // --sort-by orders by the field's value.
  Result sorted = Kcache("get pods -A -o json --sort-by {.spec.nodeName} --cache " + cache);
  ASSERT_EQ(sorted.exit_code, 0) << sorted.output;
  auto items = nlohmann::json::parse(sorted.output)["items"];
  ASSERT_EQ(items.size(), 300u);
  for (size_t i = 1; i < items.size(); ++i) {
    EXPECT_LE(items[i - 1]["spec"]["nodeName"].get<std::string>(),
              items[i]["spec"]["nodeName"].get<std::string>());
  }
  Result by_index =
      Kcache("get pods -A -o name --index kcache.io/labels=tier=web --cache " + cache);
  Result by_label = Kcache("get pods -A -o name -l tier=web --cache " + cache);
  EXPECT_EQ(by_index.output, by_label.output);
  EXPECT_GT(std::count(by_index.output.begin(), by_index.output.end(), '\n'), 0) << by_index.output;

  Result stats = Kcache("stats --snapshot " + file);
  ASSERT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("CLUSTER   " + s.url), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("nodes      Node   Cluster      5"), std::string::npos)
      << stats.output;
  EXPECT_NE(stats.output.find("pods       Pod    Namespaced   300"), std::string::npos)
      << stats.output;
  EXPECT_NE(stats.output.find("ns-2        pods       100"), std::string::npos) << stats.output;
  Result one_ns = Kcache("stats -n ns-1 --cache " + cache);
  ASSERT_EQ(one_ns.exit_code, 0) << one_ns.output;
  EXPECT_NE(one_ns.output.find("ns-1        pods       100"), std::string::npos) << one_ns.output;
  EXPECT_EQ(one_ns.output.find("ns-2 "), std::string::npos) << one_ns.output;

  // diff: identical sources exit 0, differing ones 1 with the objects.
  Result same = Kcache("diff " + file + " " + restored);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("pods: no differences (300 objects)"), std::string::npos)
      << same.output;
  {
    auto c = kcache::Cache::Open(restored);
    ASSERT_OK(c) << c.status();
    auto pods = (*c)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    auto victim = (*pods)->GetByKey(
        "ns-0/" + nlohmann::json::parse(Kcache("get pods -n ns-0 -o json --cache " + cache)
                                            .output)["items"][0]["metadata"]["name"]
                      .get<std::string>());
    ASSERT_TRUE(victim.ok() && *victim);
    ASSERT_OK((*pods)->Delete(*victim));
    ASSERT_OK((*pods)->Add(kcache::testing::Pod("extra", "ns-0", "99999", {{"app", "x"}})));
  }
  Result differ = Kcache("diff " + file + " " + restored);
  EXPECT_EQ(differ.exit_code, 1) << differ.output;
  EXPECT_NE(differ.output.find("pods: 1 added, 1 removed, 0 changed, 299 unchanged"),
            std::string::npos)
      << differ.output;
  EXPECT_NE(differ.output.find("  + ns-0/extra"), std::string::npos) << differ.output;
  Result nowhere = Kcache("diff " + file + " " + dir + "/absent");
  EXPECT_EQ(nowhere.exit_code, 2) << nowhere.output;

  // Damage: a flipped byte and a truncation are found, named, and imported
  // into nothing.
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::string flipped = bytes;
    flipped[bytes.size() / 2] ^= 0x20;
    std::ofstream(dir + "/flipped.kcs", std::ios::binary) << flipped;
    std::ofstream(dir + "/short.kcs", std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  Result flipped = Kcache("snapshot verify " + dir + "/flipped.kcs");
  EXPECT_EQ(flipped.exit_code, 1);
  EXPECT_NE(flipped.output.find("checksum mismatch (the file is corrupt)"), std::string::npos)
      << flipped.output;
  Result truncated = Kcache("snapshot import " + dir + "/short.kcs --cache " + dir + "/never");
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.output.find("the file is truncated"), std::string::npos) << truncated.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/never"));
  Result not_one = Kcache("get pods --snapshot " + cache + "/CURRENT");
  EXPECT_NE(not_one.output.find("is not a kcache snapshot"), std::string::npos) << not_one.output;

  Stop(s.process, SIGTERM);
  kcache::testing::RunCommand("rm -rf " + dir);
}

// kcache tree follows ownerReferences up to the top owner and down to every
// dependent, across keyspaces; an owner the cache lacks is named.
TEST(KcacheToolTest, TreeShowsOwnersAndDependents) {
  char tmpl[] = "/tmp/kcache-tree-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string cache = std::string(tmpl) + "/cache";
  auto obj = [](const std::string& api, const std::string& kind, const std::string& name,
                const std::string& uid, const std::string& owner_kind = "",
                const std::string& owner = "", const std::string& owner_uid = "",
                const std::string& owner_api = "apps/v1") {
    nlohmann::json j = {{"apiVersion", api},
                        {"kind", kind},
                        {"metadata",
                         {{"name", name},
                          {"namespace", "default"},
                          {"uid", uid},
                          {"resourceVersion", "1"},
                          {"creationTimestamp", "2026-01-01T00:00:00Z"}}}};
    if (!owner.empty()) {
      j["metadata"]["ownerReferences"] = {{{"apiVersion", owner_api},
                                           {"kind", owner_kind},
                                           {"name", owner},
                                           {"uid", owner_uid},
                                           {"controller", true}}};
    }
    return kcache::testing::MakeObject(j.dump());
  };
  {
    auto c = kcache::Cache::Open(cache);
    ASSERT_OK(c);
    auto deploys = (*c)->OpenKeyspace("deployments.apps");
    auto sets = (*c)->OpenKeyspace("replicasets.apps");
    auto pods = (*c)->OpenKeyspace("pods");
    ASSERT_TRUE(deploys.ok() && sets.ok() && pods.ok());
    ASSERT_OK((*deploys)->Add(obj("apps/v1", "Deployment", "web", "d1")));
    ASSERT_OK((*sets)->Add(obj("apps/v1", "ReplicaSet", "web-1", "r1", "Deployment", "web", "d1")));
    ASSERT_OK((*sets)->Add(obj("apps/v1", "ReplicaSet", "web-0", "r0", "Deployment", "web", "d1")));
    ASSERT_OK((*pods)->Add(obj("v1", "Pod", "web-1-a", "p1", "ReplicaSet", "web-1", "r1")));
    ASSERT_OK((*pods)->Add(obj("v1", "Pod", "web-1-b", "p2", "ReplicaSet", "web-1", "r1")));
    ASSERT_OK((*pods)->Add(obj("v1", "Pod", "orphan", "p3", "ReplicaSet", "gone", "r9")));
    ASSERT_OK((*c)->SetResourceInfo(
        "replicasets.apps",
        kcache::ResourceInfo(
            {.group = "apps", .version = "v1", .resource = "replicasets", .kind = "ReplicaSet"})));
  }
  Result from_pod = Kcache("tree pod web-1-a --cache " + cache);
  ASSERT_EQ(from_pod.exit_code, 0) << from_pod.output;
  std::vector<std::string> lines;
  for (std::istringstream in(from_pod.output); std::getline(in, lines.emplace_back());) {
  }
  lines.pop_back();
  ASSERT_EQ(lines.size(), 4u) << from_pod.output;
  EXPECT_EQ(lines[0].rfind("NAMESPACE   NAME", 0), 0u) << from_pod.output;
  EXPECT_EQ(lines[1].rfind("default     Deployment/web   ", 0), 0u) << from_pod.output;
  EXPECT_EQ(lines[2].rfind("default     └─ReplicaSet/web-1   ", 0), 0u) << from_pod.output;
  EXPECT_EQ(lines[3].rfind("default       └─Pod/web-1-a   ", 0), 0u) << from_pod.output;
  for (size_t i = 1; i < lines.size(); ++i)
    EXPECT_EQ(lines[i].back(), 'd') << lines[i];  // created 2026-01-01
  Result from_top = Kcache("tree deploy web --cache " + cache);
  ASSERT_EQ(from_top.exit_code, 0) << from_top.output;
  EXPECT_NE(from_top.output.find("├─ReplicaSet/web-0"), std::string::npos) << from_top.output;
  EXPECT_NE(from_top.output.find("└─ReplicaSet/web-1"), std::string::npos) << from_top.output;
  EXPECT_NE(from_top.output.find("    ├─Pod/web-1-a"), std::string::npos) << from_top.output;
  EXPECT_NE(from_top.output.find("    └─Pod/web-1-b"), std::string::npos) << from_top.output;
  EXPECT_EQ(from_top.output.find("orphan"), std::string::npos) << from_top.output;
  Result orphan = Kcache("tree pods orphan --cache " + cache);
  EXPECT_NE(orphan.output.find("ReplicaSet/gone (not in the cache)"), std::string::npos)
      << orphan.output;
  EXPECT_NE(orphan.output.find("└─Pod/orphan"), std::string::npos) << orphan.output;
  Result absent = Kcache("tree pods nope --cache " + cache);
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_NE(absent.output.find("pods \"nope\" not found"), std::string::npos) << absent.output;
  kcache::testing::RunCommand(std::string("rm -rf ") + tmpl);
}

}  // namespace

#include <sys/mount.h>

#include "testing/temp_dir.h"

namespace {

// A cache whose last list was cut short is read with a warning on stderr,
// as kubectl says its warnings (before: exit 0 with part of the pods and no
// word); a snapshot that cannot be read is refused with the system's reason
// (before: "is neither a cache directory nor a snapshot file").
TEST(KcacheToolTest, AnIncompleteCacheIsReadWithAWarningAndAnUnreadableFileSaysWhy) {
  kcache::testing::TempDir dir;
  const std::string cache_dir = dir.Sub("c");
  {
    auto cache = kcache::Cache::Open(cache_dir);
    ASSERT_OK(cache);
    auto pods = (*cache)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    kcache::Transaction txn;
    for (int i = 0; i < 5; ++i) txn.Add(kcache::testing::Pod("p" + std::to_string(i), "ns", "7"));
    txn.resource_version = "7";
    ASSERT_OK((*pods)->Commit(txn, nullptr));
    auto session = (*pods)->BeginReplace([](std::vector<kcache::StoreChange>) {});
    ASSERT_OK(session);
    ASSERT_OK((*session)->Put(kcache::testing::Pod("p0", "ns", "8")));
  }  // the session dropped: the relist was cut short
  const std::string get = kcache::testing::KcacheBin() + " get pods -A --cache " + cache_dir;
  Result err = kcache::testing::RunCommand(get + " 2>&1 >/dev/null");
  EXPECT_EQ(err.exit_code, 0) << err.output;
  EXPECT_NE(err.output.find("Warning: the cache's pods may be incomplete: their last list was "
                            "cut short"),
            std::string::npos)
      << err.output;
  Result out = kcache::testing::RunCommand(get + " 2>/dev/null");
  EXPECT_NE(out.output.find("p4"), std::string::npos) << out.output;

  ASSERT_EQ(Kcache("snapshot export --cache " + cache_dir + " " + dir.Sub("s.kcs")).exit_code, 0);
  ASSERT_EQ(::chmod(dir.Sub("s.kcs").c_str(), 0), 0);
  // Root reads any file: drop to nobody for the read.
  const std::string as =
      ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  ::chmod(dir.path().c_str(), 0755);
  Result diff = kcache::testing::RunCommand(as + kcache::testing::KcacheBin() + " diff " +
                                            dir.Sub("s.kcs") + " " + dir.Sub("s.kcs") + " 2>&1");
  EXPECT_NE(diff.exit_code, 0) << diff.output;
  EXPECT_NE(diff.output.find("Permission denied"), std::string::npos) << diff.output;
  EXPECT_EQ(diff.output.find("neither"), std::string::npos) << diff.output;
}

// A backup taken from a read-only volume: the export reads the cache as a
// reader does (before: "open .../LOG: Read-only file system"). Needs root to
// mount a tmpfs, as .ci/run has.
TEST(KcacheToolTest, ACacheOnAReadOnlyVolumeIsExported) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  kcache::testing::TempDir dir;
  const std::string vol = dir.Sub("vol");
  std::filesystem::create_directory(vol);
  ASSERT_EQ(::mount("tmpfs", vol.c_str(), "tmpfs", 0, "size=32m"), 0) << std::strerror(errno);
  {
    auto cache = kcache::Cache::Open(vol);
    ASSERT_OK(cache);
    auto pods = (*cache)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    ASSERT_OK((*pods)->Add(kcache::testing::Pod("a", "ns", "3")));
  }
  ASSERT_EQ(::mount("tmpfs", vol.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=32m"), 0)
      << std::strerror(errno);
  Result r = Kcache("snapshot export --cache " + vol + " " + dir.Sub("backup.kcs"));
  ::umount2(vol.c_str(), MNT_DETACH);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("exported " + vol), std::string::npos) << r.output;
  Result verify = Kcache("snapshot verify " + dir.Sub("backup.kcs"));
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
}

// A served cache removed and created again by a new sync or import: before,
// `serve --cache` aborted (a RocksDB assertion in the secondary instance's
// catch-up) and `get -w` failed with "Failed to open wal_dir". Both now stop
// with an error that says what happened, and serve nothing of the old view
// meanwhile.
TEST(KcacheToolTest, AServedOrWatchedCacheThatIsReplacedEndsTheReaderWithAClearError) {
  kcache::testing::TempDir dir;
  const std::string cache_dir = dir.Sub("c");
  auto fill = [&](const char* name) {
    auto cache = kcache::Cache::Open(cache_dir);
    ASSERT_OK(cache);
    auto pods = (*cache)->OpenKeyspace("pods");
    ASSERT_OK(pods);
    ASSERT_OK((*pods)->Add(kcache::testing::Pod(name, "ns", "3")));
    kcache::ResourceInfo info;
    info.version = "v1";
    info.kind = "Pod";
    info.resource = "pods";
    info.namespaced = true;
    ASSERT_OK((*cache)->SetResourceInfo("pods", info));
  };
  fill("old");
  kcache::testing::ServeProcess serve =
      kcache::testing::StartServe("--cache " + cache_dir + " --listen 127.0.0.1:0");
  ASSERT_FALSE(serve.url.empty()) << serve.banner;
  kcache::testing::Background watch = kcache::testing::StartCommand(
      kcache::testing::KcacheBin() + " get pods -A -w --cache " + cache_dir + " 2>&1");
  EXPECT_NE(kcache::testing::ReadLines(watch.out, 2).find("old"), std::string::npos);
  std::filesystem::remove_all(cache_dir);
  fill("new");
  int status = 0;
  const int pid = std::exchange(serve.process.pid, -1);  // it ends by itself
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  std::string said = kcache::testing::Drain(std::exchange(serve.process.out, -1));
  EXPECT_NE(said.find("the cache " + cache_dir + " was removed"), std::string::npos) << said;
  ASSERT_EQ(::waitpid(watch.pid, &status, 0), watch.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  said = kcache::testing::Drain(watch.out);
  EXPECT_NE(said.find("since this reader opened it; reopen it"), std::string::npos) << said;
  EXPECT_EQ(said.find("new"), std::string::npos) << said;
}

}  // namespace

// Every file and directory kcache creates is private to its owner (0600 and
// 0700) whatever the umask: a cache holds Secrets when they are synced, and
// so do its snapshots, journals, logs and the directories it works in.
TEST(KcacheToolTest, EveryFileItCreatesIsPrivateWhateverTheUmask) {
  kcache::testing::ServeProcess s = kcache::testing::StartServe(
      "--listen 127.0.0.1:0 --pods 300 --namespaces 3 --nodes 5 --creates 5 --updates 50 "
      "--deletes 2");
  ASSERT_FALSE(s.url.empty()) << s.banner;
  kcache::testing::TempDir dir;
  // The user's own empty directory (a mount point, say) keeps its mode; what
  // kcache makes inside it does not take the umask's.
  const std::string given = dir.Sub("given");
  ASSERT_TRUE(std::filesystem::create_directory(given));
  const std::string cache = dir.Sub("cache"), file = dir.Sub("s.kcs");
  // A snapshot exported over a file open to all is private too.
  std::FILE* old = std::fopen(file.c_str(), "w");
  ASSERT_NE(old, nullptr);
  std::fclose(old);
  std::filesystem::permissions(file, std::filesystem::perms(0666));
  const std::vector<std::string> commands = {
      "sync pods nodes --server " + s.url + " --cache " + cache + " --until-synced",
      // A resumed sync writes through the WAL and the journal, and flushes.
      "sync pods nodes --server " + s.url + " --cache " + cache +
          " 2>&1 & pid=$!; sleep 2; kill $pid; wait $pid",
      "snapshot export --cache " + cache + " " + file,
      "snapshot create --cache " + cache + " " + dir.Sub("copy"),
      "snapshot import " + file + " --cache " + dir.Sub("restored"),
      "snapshot import " + file + " --cache " + given,
      "get pods -A -o name --cache " + cache,
      "stats --cache " + cache,
  };
  for (const std::string& c : commands) {
    Result r = kcache::testing::RunCommand("umask 000 && " + kcache::testing::KcacheBin() + " " +
                                           c + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << c << "\n" << r.output;
  }
  // A cache written by a kcache before this one has 0644 files: a writer's
  // open makes them private.
  int widened = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache)) {
    if (!e.is_regular_file()) continue;
    std::filesystem::permissions(e.path(), std::filesystem::perms(0644));
    ++widened;
  }
  ASSERT_GT(widened, 5);
  Result resumed =
      kcache::testing::RunCommand(kcache::testing::KcacheBin() + " sync pods --server " + s.url +
                                  " --cache " + cache + " --until-synced 2>&1");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  int checked = 0;
  std::string open_to_others;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (e.path() == given) continue;
    const auto perms = e.symlink_status().permissions();
    ++checked;
    using P = std::filesystem::perms;
    if ((perms & (P::group_all | P::others_all)) != P::none) {
      char mode[16];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(perms));
      open_to_others += std::string(mode) + " " + e.path().string() + "\n";
    }
  }
  EXPECT_EQ(open_to_others, "");
  // The tree is large enough to mean something: tables, logs, the snapshot.
  EXPECT_GT(checked, 30);
}

// Per-token grants as kubectl (client-go underneath) meets them through a
// served cache: kube-apiserver's Forbidden for what a token may not read,
// discovery of only what it may, and lists and watches of what it may.
// kubectl sends tokens over TLS only, so the server serves TLS.
TEST(KcacheToolTest, KubectlReadsWhatItsTokenIsGrantedAndIsForbiddenTheRest) {
  kcache::testing::ServeProcess cluster = kcache::testing::StartServe(
      "--listen 127.0.0.1:0 --pods 30 --namespaces 3 --nodes 2 --creates 0 --updates 0 "
      "--relabels 0 --deletes 0");
  ASSERT_FALSE(cluster.url.empty()) << cluster.banner;
  kcache::testing::TempDir dir;
  const std::string cache = dir.Sub("cache"), cert = dir.Sub("crt"), key = dir.Sub("key");
  Result synced =
      Kcache("sync pods nodes --server " + cluster.url + " --cache " + cache + " --until-synced");
  ASSERT_EQ(synced.exit_code, 0) << synced.output;
  Result made = kcache::testing::MakeServingCertificate(cert, key);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::ofstream(dir.Sub("tokens")) << "plain\nteam resources=pods namespaces=ns-1 name=team-one\n";
  kcache::testing::ServeProcess served = kcache::testing::StartServe(
      "--cache " + cache + " --listen 127.0.0.1:0 --token-file " + dir.Sub("tokens") +
      " --tls-cert-file " + cert + " --tls-private-key-file " + key);
  ASSERT_FALSE(served.url.empty()) << served.banner;
  auto kubectl = [&](const std::string& token, const std::string& args) {
    return kcache::testing::RunCommand(
        "kubectl --server " + served.url + " --certificate-authority " + cert + " --cache-dir " +
        dir.Sub("discovery-" + token) + " --token " + token + " " + args + " 2>&1");
  };
  Result mine = kubectl("team", "get pods -n ns-1 -o name");
  EXPECT_EQ(mine.exit_code, 0) << mine.output;
  EXPECT_EQ(std::count(mine.output.begin(), mine.output.end(), '\n'), 10) << mine.output;
  Result other = kubectl("team", "get pods -n ns-2");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_EQ(other.output,
            "Error from server (Forbidden): pods is forbidden: User \"team-one\" cannot list "
            "resource \"pods\" in API group \"\" in the namespace \"ns-2\"\n");
  Result everywhere = kubectl("team", "get pods -A");
  EXPECT_NE(everywhere.output.find("cannot list resource \"pods\" in API group \"\" at the "
                                   "cluster scope"),
            std::string::npos)
      << everywhere.output;
  Result one = kubectl("team", "get pod -n ns-2 some-pod");
  EXPECT_NE(one.output.find("pods \"some-pod\" is forbidden: User \"team-one\" cannot get"),
            std::string::npos)
      << one.output;
  Result watch = kubectl("team", "get pods -n ns-2 -w --request-timeout 5s");
  EXPECT_NE(watch.output.find("(Forbidden)"), std::string::npos) << watch.output;
  Result watched = kcache::testing::RunCommand(
      "timeout 3 kubectl --server " + served.url + " --certificate-authority " + cert +
      " --cache-dir " + dir.Sub("discovery-team") + " --token team get pods -n ns-1 -w 2>&1");
  EXPECT_EQ(std::count(watched.output.begin(), watched.output.end(), '\n'), 11) << watched.output;
  Result kinds = kubectl("team", "api-resources --no-headers");
  EXPECT_EQ(kinds.output.rfind("pods ", 0), 0u) << kinds.output;
  EXPECT_EQ(std::count(kinds.output.begin(), kinds.output.end(), '\n'), 1) << kinds.output;
  Result nodes = kubectl("plain", "get nodes -o name");
  EXPECT_EQ(nodes.output, "node/node-0\nnode/node-1\n");
  Result unknown = kubectl("stranger", "get pods -n ns-1");
  EXPECT_NE(unknown.output.find("You must be logged in to the server"), std::string::npos)
      << unknown.output;
}

namespace {

// kcache get's categories: "all" expands to the resources whose recorded
// categories name it, in discovery's order, with kinds named as kubectl
// names them; a cache that recorded no categories expands "all" by
// kubectl's own list.
TEST(KcacheToolTest, GetAllExpandsTheRecordedCategoryInDiscoveryOrder) {
  kcache::testing::TempDir dir;
  for (bool recorded : {true, false}) {
    const std::string path = dir.Sub(recorded ? "recorded" : "unrecorded");
    {
      auto cache = kcache::Cache::Open(path);
      ASSERT_OK(cache);
      struct Row {
        std::string group, resource, kind;
        bool all;  // in category "all"
      } rows[] = {
          {"apps", "deployments", "Deployment", true},
          {"", "services", "Service", true},
          {"", "configmaps", "ConfigMap", false},
          {"", "pods", "Pod", true},
          {"batch", "jobs", "Job", true},
      };
      for (const Row& row : rows) {
        kcache::ResourceInfo info(
            {.group = row.group, .version = "v1", .resource = row.resource, .kind = row.kind});
        if (recorded && row.all) info.categories = {"all"};
        const std::string keyspace = row.resource + (row.group.empty() ? "" : "." + row.group);
        ASSERT_OK((*cache)->SetResourceInfo(keyspace, info));
        auto ks = (*cache)->OpenKeyspace(keyspace);
        ASSERT_OK(ks);
        ASSERT_OK((*ks)->Add(kcache::testing::MakeObject(
            R"({"apiVersion":")" + (row.group.empty() ? "" : row.group + "/") + R"(v1","kind":")" +
            row.kind +
            R"(","metadata":{"name":"x","namespace":"default","resourceVersion":"1"}})")));
      }
    }
    Result all = Kcache("get all -o name --cache " + path);
    ASSERT_EQ(all.exit_code, 0) << all.output;
    EXPECT_EQ(all.output, "pod/x\nservice/x\ndeployment.apps/x\njob.batch/x\n") << path;
    Result named = Kcache("get all x --cache " + path);
    EXPECT_EQ(named.exit_code, 1);
    EXPECT_EQ(named.output, "error: you must specify only one resource\n");
  }
}

// A sync records the namespace and selectors it was given (kcache stats
// shows them); a sync with other ones lists that resource again instead of
// resuming (what is no longer selected goes), and the next one resumes. A
// keyspace of a named informer ("pods#mine") is read by its name.
// Invariant 3 through the tool: one relist for a changed selection, then
// resume without relist.
TEST(KcacheToolTest, SyncRecordsItsSelectionAndAnotherOneListsAgain) {
  ServeProcess s = StartServe(
      "--listen 127.0.0.1:0 --pods 30 --namespaces 3 --nodes 2 --creates 0 --updates 0 "
      "--relabels 0 --deletes 0");
  ASSERT_FALSE(s.url.empty()) << s.banner;
  kcache::testing::TempDir dir;
  const std::string cache = dir.Sub("cache");
  auto sync = [&](const std::string& ns) {
    Result r = Kcache("sync pods -n " + ns + " --server " + s.url + " --cache " + cache +
                      " --until-synced");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  };
  sync("ns-1");
  Result stats = Kcache("stats --cache " + cache);
  EXPECT_NE(stats.output.find("RESOURCE   NAMESPACE   LABEL SELECTOR   FIELD SELECTOR\n"
                              "pods       ns-1        <all>            <all>\n"),
            std::string::npos)
      << stats.output;
  std::string changed = sync("ns-0");
  EXPECT_NE(changed.find("(listed with namespace ns-1, no label selector before, now namespace "
                         "ns-0, no label selector: listed again, not resumed)"),
            std::string::npos)
      << changed;
  Result got = Kcache("get pods -A --no-headers --cache " + cache);
  EXPECT_EQ(std::count(got.output.begin(), got.output.end(), '\n'), 20) << got.output;
  EXPECT_EQ(got.output.find("ns-1"), std::string::npos) << got.output;
  std::string same = sync("ns-0");
  EXPECT_NE(same.find("resuming the watch from resourceVersion"), std::string::npos) << same;

  {
    auto c = kcache::Cache::Open(cache);
    ASSERT_OK(c);
    kcache::ResourceInfo info({.version = "v1", .resource = "pods", .kind = "Pod"});
    info.selection = kcache::ResourceSelection{"", "app=x", ""};
    ASSERT_OK((*c)->SetResourceInfo("pods#mine", info));
    auto ks = (*c)->OpenKeyspace("pods#mine");
    ASSERT_OK(ks);
    ASSERT_OK((*ks)->Add(kcache::testing::MakeObject(
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"mine","namespace":"a","resourceVersion":"1"}})")));
  }
  Result mine = Kcache("get pods#mine -A -o name --cache " + cache);
  EXPECT_EQ(mine.output, "pod/mine\n");
  Result plain = Kcache("get pods -A -o name --cache " + cache);
  EXPECT_EQ(std::count(plain.output.begin(), plain.output.end(), '\n'), 20) << plain.output;
}

}  // namespace
