// SPDX-License-Identifier: Apache-2.0

// kcache get against kubectl get, byte for byte: the objects of
// tests/integration/golden/objects.yaml go into the real kube-apiserver,
// `kcache sync` copies them into a cache, and every form in
// golden/forms.txt runs through both tools. Standard output and exit codes
// must be identical, and standard error too except on forms marked "~".
//
// AGE cells count seconds, so a form whose output changed between two
// kubectl runs around the kcache run may match either of them.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include <unistd.h>

#include "integration/cluster.h"
#include "testing/command.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Cluster;
using testing::RunCommand;

struct Outcome {
  int code;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s;
}

// kubectl's warnings about ambiguous short names ("ev") are its own.
std::string DropWarnings(const std::string& err) {
  std::string out;
  size_t from = 0;
  while (from < err.size()) {
    size_t nl = err.find('\n', from);
    std::string line = err.substr(from, nl == std::string::npos ? nl : nl - from + 1);
    if (line.rfind("Warning: ", 0) != 0) out += line;
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return out;
}

class GetGoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Cluster& c = Cluster::Get();
    const char* golden = std::getenv("KCACHE_GOLDEN_DIR");
    const char* kcache = std::getenv("KCACHE_BIN");
    golden_ = golden ? golden : "";
    kcache_ = kcache ? kcache : "";
    ASSERT_FALSE(golden_.empty()) << "KCACHE_GOLDEN_DIR is not set";
    ASSERT_FALSE(kcache_.empty()) << "KCACHE_BIN is not set";
    env_ = "export KUBECONFIG=" + c.File("kubeconfig") + " GOLDEN=" + golden_ + "; ";
    dir_ = new testing::TempDir();
    auto setup = RunCommand(env_ + golden_ + "/setup 2>&1");
    ASSERT_EQ(setup.exit_code, 0) << setup.output;
    auto sync = RunCommand(env_ + kcache_ +
                           " sync pods nodes namespaces deployments replicasets services "
                           "configmaps secrets events gadgets --until-synced --cache " +
                           dir_->path() + "/cache 2>&1");
    ASSERT_EQ(sync.exit_code, 0) << sync.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static Outcome Get(const std::string& tool, const std::string& args) {
    const std::string err = dir_->path() + "/stderr";
    auto r = RunCommand(env_ + tool + " get " + args + " 2>" + err);
    return {r.exit_code, r.output, DropWarnings(Slurp(err))};
  }

  // Starts `kcache serve` of `source` ("--cache DIR" or "--snapshot FILE")
  // on a free port and writes a kubeconfig for it; returns the kubectl
  // command that reads through it (its own discovery cache: ports are
  // reused across runs).
  static std::string Serve(const std::string& source, const std::string& name) {
    const std::string base = dir_->path() + "/" + name;
    auto started = RunCommand("(" + kcache_ + " serve --serve-secrets --listen 127.0.0.1:0 " +
                              source + " >" + base + ".log 2>&1 & echo $! >" + base + ".pid)");
    EXPECT_EQ(started.exit_code, 0) << started.output;
    std::string url;
    for (int i = 0; i < 100 && url.empty(); ++i) {
      std::string log = Slurp(base + ".log");
      if (size_t at = log.find("serving on "); at != std::string::npos) {
        url = log.substr(at + 11, log.find(' ', at + 11) - at - 11);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    EXPECT_FALSE(url.empty()) << Slurp(base + ".log");
    std::ofstream(base + ".kubeconfig")
        << "apiVersion: v1\nkind: Config\nclusters:\n- name: kcache\n  cluster:\n    server: "
        << url
        << "\ncontexts:\n- name: kcache\n  context:\n    cluster: kcache\n    user: reader\n"
           "current-context: kcache\nusers:\n- name: reader\n  user: {}\n";
    return "kubectl --kubeconfig " + base + ".kubeconfig --cache-dir " + base + ".discovery";
  }
  static void StopServing(const std::string& name) {
    RunCommand("kill $(cat " + dir_->path() + "/" + name + ".pid)");
  }

  static std::string golden_, kcache_, env_;
  static testing::TempDir* dir_;
};

std::string GetGoldenTest::golden_, GetGoldenTest::kcache_, GetGoldenTest::env_;
testing::TempDir* GetGoldenTest::dir_;

TEST_F(GetGoldenTest, EveryFormPrintsWhatKubectlPrints) {
  std::ifstream forms(golden_ + "/forms.txt");
  ASSERT_TRUE(forms) << golden_ << "/forms.txt";
  const std::string cache = " --cache " + dir_->path() + "/cache";
  int checked = 0;
  for (std::string line; std::getline(forms, line);) {
    if (line.empty() || line[0] == '#') continue;
    const bool loose_stderr = line.rfind("~ ", 0) == 0;
    if (loose_stderr) line = line.substr(2);
    ++checked;
    Outcome before = Get("kubectl", line);
    Outcome ours = Get(kcache_, line + cache);
    Outcome after = Get("kubectl", line);
    const bool same_out = ours.out == before.out || ours.out == after.out;
    EXPECT_TRUE(same_out) << "kcache get " << line << "\n--- kubectl:\n"
                          << after.out << "--- kcache:\n"
                          << ours.out;
    EXPECT_EQ(ours.code, after.code)
        << "exit code of get " << line << "\nkcache stderr: " << ours.err
        << "kubectl stderr: " << after.err;
    if (loose_stderr) {
      EXPECT_EQ(ours.err.empty(), after.err.empty()) << "get " << line;
    } else {
      EXPECT_EQ(ours.err, after.err) << "standard error of get " << line;
    }
  }
  EXPECT_GT(checked, 50) << "forms.txt lost its forms";
}

// Tables' AGE cells count seconds: two tools printing the same row a
// moment apart may differ there, and so may the padding of that column.
// (Forms without AGE are compared byte for byte.)
std::string WithoutAge(const std::string& text) {
  static const std::regex kAge(" [0-9]+[smhdy][0-9smhdy]*(?=\\s)");
  static const std::regex kSpaces(" +");
  return std::regex_replace(std::regex_replace(text, kAge, " AGE"), kSpaces, " ");
}

// kubectl through `kcache serve --cache` prints what kubectl prints from
// the API server, for every form: the served cache answers discovery,
// tables, lists, selectors and errors as the API server does.
TEST_F(GetGoldenTest, KubectlThroughServePrintsWhatItPrintsFromTheApiServer) {
  std::ifstream forms(golden_ + "/forms.txt");
  ASSERT_TRUE(forms) << golden_ << "/forms.txt";
  const std::string served = Serve("--cache " + dir_->path() + "/cache", "serve-golden");
  // The same cache exported, served from the file in place.
  const std::string file = dir_->path() + "/golden.kcs";
  auto exported =
      RunCommand(kcache_ + " snapshot export --cache " + dir_->path() + "/cache " + file + " 2>&1");
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const std::string from_file = Serve("--snapshot " + file, "serve-golden-snapshot");
  int checked = 0;
  for (std::string line; std::getline(forms, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("~ ", 0) == 0) line = line.substr(2);
    ++checked;
    Outcome before = Get("kubectl", line);
    Outcome ours = Get(served, line);
    Outcome after = Get("kubectl", line);
    // Under load three kubectl runs may span three seconds, and AGE cells
    // of young objects then differ in each: compare those without AGE.
    EXPECT_TRUE(ours.out == before.out || ours.out == after.out ||
                (before.out != after.out && WithoutAge(ours.out) == WithoutAge(after.out)))
        << "get " << line << "\n--- from the API server:\n"
        << after.out << "--- through kcache serve:\n"
        << ours.out;
    EXPECT_EQ(ours.code, after.code)
        << "exit code of get " << line << "\nserved stderr: " << ours.err
        << "API server stderr: " << after.err;
    EXPECT_EQ(ours.err, after.err) << "standard error of get " << line;
    // Through `kcache serve --snapshot`: what the cache served (AGE aside,
    // as above: the two runs are seconds apart).
    Outcome snap = Get(from_file, line);
    EXPECT_TRUE(snap.out == ours.out || WithoutAge(snap.out) == WithoutAge(ours.out))
        << "get " << line << "\n--- through kcache serve --cache:\n"
        << ours.out << "--- through kcache serve --snapshot:\n"
        << snap.out;
    EXPECT_EQ(snap.code, ours.code) << "exit code of get " << line << "\n" << snap.err;
    EXPECT_EQ(snap.err, ours.err) << "standard error of get " << line;
  }
  EXPECT_GT(checked, 50) << "forms.txt lost its forms";
  StopServing("serve-golden");
  StopServing("serve-golden-snapshot");
}

// kcache get -w while kcache sync writes the cache, against kubectl get -w
// on the API server, for the same changes: the same lines (AGE aside).
TEST_F(GetGoldenTest, WatchPrintsWhatKubectlPrints) {
  // Unique per run: without a controller manager, a namespace is never
  // deleted.
  const std::string ns = "watch-golden-" + std::to_string(getpid());
  const std::string cache = dir_->path() + "/watch-cache";
  auto run = [&](const std::string& cmd) {
    auto r = RunCommand(env_ + cmd + " 2>&1");
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    return r.output;
  };
  run("kubectl create namespace " + ns);
  run("kubectl -n " + ns + " create configmap a --from-literal=k=1");
  run("kubectl -n " + ns + " create configmap b --from-literal=k=2");
  run(kcache_ + " sync configmaps --until-synced --cache " + cache);
  // The sync resumes from the cache and follows the changes below.
  const std::string sync_pid = dir_->path() + "/sync.pid";
  run("(" + kcache_ + " sync configmaps --cache " + cache + " >" + dir_->path() +
      "/sync.log 2>&1 & echo $! >" + sync_pid + ")");
  // kubectl -w through `kcache serve` on the same cache, as the sync writes it.
  const std::string served = Serve("--cache " + cache, "serve-watch");
  // The API server's resourceVersion now: the changes below come after it.
  std::string start_rv = run("kubectl get --raw /api/v1/namespaces/" + ns +
                             "/configmaps | python3 -c 'import json, sys; "
                             "print(json.load(sys.stdin)[\"metadata\"][\"resourceVersion\"])'");
  start_rv.erase(start_rv.find_last_not_of("\n") + 1);

  const std::vector<std::string> forms = {
      "",
      "--output-watch-events",
      "-l x=y",
      "-o wide --show-labels",
      "-o name",
      "-o json",
      "-o yaml --output-watch-events",
      "-o json --output-watch-events",
      "-o jsonpath='{.metadata.name}:{.data.k}{\"\\n\"}'",
      "-o custom-columns=N:.metadata.name,K:.data.k",
      "a",
      "--watch-only",
  };
  // Each form runs in both tools for the same 40 seconds, long enough for
  // the changes below (kubectl takes a second or two per command).
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::string> files;
  for (size_t i = 0; i < forms.size(); ++i) {
    const std::string base = dir_->path() + "/watch-" + std::to_string(i);
    const std::string args = "get configmaps -n " + ns + " " + forms[i] + " -w";
    run("(timeout 40 kubectl " + args + " >" + base + ".kubectl 2>&1 &)");
    run("(" + kcache_ + " " + args + " --request-timeout 40s --cache " + cache + " >" + base +
        ".kcache 2>&1 &)");
    run("(timeout 40 " + served + " " + args + " >" + base + ".served 2>&1 &)");
    files.push_back(base);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  run("kubectl -n " + ns + " create configmap c --from-literal=k=3");
  run("kubectl -n " + ns + " label configmap a x=y");
  run("kubectl -n " + ns + " patch configmap a -p '{\"data\":{\"k\":\"10\"}}'");
  run("kubectl -n " + ns + " label configmap a x-");   // leaves the selection x=y
  run("kubectl -n " + ns + " label configmap b x=y");  // enters it
  run("kubectl -n " + ns + " delete configmap c");
  ASSERT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(36))
      << "the changes took too long for the watchers to see them all";
  std::this_thread::sleep_until(started + std::chrono::seconds(42));

  for (size_t i = 0; i < forms.size(); ++i) {
    std::string theirs = Slurp(files[i] + ".kubectl"), ours = Slurp(files[i] + ".kcache");
    EXPECT_EQ(WithoutAge(ours), WithoutAge(theirs)) << "get -w " << forms[i] << "\n--- kubectl:\n"
                                                    << theirs << "--- kcache:\n"
                                                    << ours;
    std::string through = Slurp(files[i] + ".served");
    EXPECT_EQ(WithoutAge(through), WithoutAge(theirs))
        << "get -w " << forms[i] << "\n--- from the API server:\n"
        << theirs << "--- through kcache serve:\n"
        << through;
  }
  // Six changes, each a line of the plain table after its header and the
  // two objects (a test that saw no events would prove nothing).
  const std::string plain = Slurp(files[0] + ".kubectl");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), '\n'), 9) << plain;

  // From a resourceVersion: the changes after it, from the cache's journal,
  // are what kubectl --watch-only printed as they happened.
  auto from = RunCommand(env_ + kcache_ + " get configmaps -n " + ns + " --watch-only --cache " +
                         cache + " --resource-version=" + start_rv + " --request-timeout=1s");
  EXPECT_EQ(from.exit_code, 0) << from.output;
  EXPECT_EQ(WithoutAge(from.output), WithoutAge(Slurp(files.back() + ".kubectl")));
  // Outside the journal's window: an error, as a watch gets 410 Gone.
  auto expired = RunCommand(env_ + kcache_ + " get configmaps -n " + ns + " -w --cache " + cache +
                            " --resource-version=1 2>&1");
  EXPECT_EQ(expired.exit_code, 1) << expired.output;
  EXPECT_NE(expired.output.find("older than the journal keeps"), std::string::npos)
      << expired.output;
  // One resource type at a time, as kubectl says.
  auto several = RunCommand(env_ + kcache_ + " get configmaps,secrets -w --cache " + cache +
                            " --request-timeout=1s 2>&1");
  auto kubectl_several = RunCommand(env_ + "kubectl get configmaps,secrets -w 2>&1");
  EXPECT_EQ(several.exit_code, 1) << several.output;
  EXPECT_EQ(several.output, kubectl_several.output);
  RunCommand("kill $(cat " + sync_pid + ")");
  StopServing("serve-watch");
}

}  // namespace
}  // namespace kcache
