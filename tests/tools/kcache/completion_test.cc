// SPDX-License-Identifier: Apache-2.0

// `kcache completion bash|zsh` and the `__complete` protocol its scripts
// speak, over a cache synced from kcache serve, and the scripts themselves
// run in bash and zsh as those shells call them on TAB.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "testing/command.h"
#include "testing/temp_dir.h"

namespace {

using kcache::testing::CommandResult;
using kcache::testing::KcacheBin;
using kcache::testing::RunCommand;

class CompletionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new kcache::testing::TempDir();
    server_ = new kcache::testing::ServeProcess(kcache::testing::StartServe(
        "--listen 127.0.0.1:0 --pods 30 --namespaces 3 --nodes 2 --creates 0 --updates 0 "
        "--relabels 0 --deletes 0"));
    ASSERT_FALSE(server_->url.empty()) << server_->banner;
    CommandResult sync = RunCommand(KcacheBin() + " sync pods nodes namespaces --server " +
                                    server_->url + " --cache " + Cache() + " --until-synced 2>&1");
    ASSERT_EQ(sync.exit_code, 0) << sync.output;
    for (const char* shell : {"bash", "zsh"}) {
      CommandResult script = RunCommand(KcacheBin() + " completion " + shell + " > " +
                                        dir_->path() + "/kcache." + shell + " 2>&1");
      ASSERT_EQ(script.exit_code, 0) << script.output;
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static std::string Cache() { return dir_->path() + "/cache"; }

  // `kcache __complete ARGS`: its output, the exit code checked.
  static std::string Complete(const std::string& args) {
    CommandResult r = RunCommand(KcacheBin() + " __complete " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.output;
    return r.output;
  }

  // What bash's completion offers for `line`, the cursor at its end.
  static std::string Bash(const std::string& line) {
    std::ofstream(dir_->path() + "/line") << line;
    CommandResult r = RunCommand("bash --norc --noprofile -c 'source " + dir_->path() +
                                 "/kcache.bash; "
                                 "COMP_LINE=$(cat " +
                                 dir_->path() +
                                 "/line); COMP_POINT=${#COMP_LINE}; "
                                 "_kcache; printf \"%s\\n\" \"${COMPREPLY[@]}\"' 2>&1");
    EXPECT_EQ(r.exit_code, 0) << line << ": " << r.output;
    return r.output;
  }

  // What zsh's completion offers for `words` (the last being completed; ""
  // for an empty one),
  // with compsys's functions replaced by ones that print their arguments.
  static std::string Zsh(const std::string& words) {
    CommandResult r = RunCommand(
        "zsh -f -c 'source " + dir_->path() +
        "/kcache.zsh; "
        "_describe() { print -rl -- \"${(@P)4}\"; [[ $5 == -S ]] && print NOSPACE; return 0; }; "
        "_files() { print FILES $*; }; compset() { print COMPSET $*; }; "
        "words=(" +
        words + "); CURRENT=${#words}; _kcache' 2>&1");
    EXPECT_EQ(r.exit_code, 0) << words << ": " << r.output;
    return r.output;
  }

  static kcache::testing::TempDir* dir_;
  static kcache::testing::ServeProcess* server_;
};

kcache::testing::TempDir* CompletionTest::dir_ = nullptr;
kcache::testing::ServeProcess* CompletionTest::server_ = nullptr;

TEST_F(CompletionTest, CommandsVerbsAndFlagsWithTheirHelp) {
  const std::string top = Complete("''");
  EXPECT_NE(top.find("get\tobjects from a cache"), std::string::npos) << top;
  EXPECT_NE(top.find("snapshot\t"), std::string::npos) << top;
  EXPECT_EQ(top.find("snapshot export"), std::string::npos) << "verbs follow their group: " << top;
  EXPECT_EQ(top.find("__complete"), std::string::npos) << top;
  EXPECT_EQ(top.substr(top.size() - 2), ":\n") << top;

  EXPECT_EQ(Complete("sn"),
            "snapshot\tconsistent copies of a cache: a directory or one portable, "
            "checksummed file\n:\n");
  const std::string verbs = Complete("snapshot ex");
  EXPECT_EQ(verbs.substr(0, verbs.find('\t')), "export") << verbs;
  EXPECT_EQ(Complete("help snapshot v").substr(0, 6), "verify");

  const std::string flags = Complete("get --no");
  EXPECT_EQ(flags, "--no-headers\tprint tables without their header\n:\n");
  const std::string shorts = Complete("get -");
  EXPECT_NE(shorts.find("\n-n\tthe namespace to list\n"), std::string::npos) << shorts;
  EXPECT_NE(shorts.find("--all-namespaces\t"), std::string::npos) << shorts;
  EXPECT_NE(Complete("snapshot export --zs").find("--zstd-level\t"), std::string::npos);

  EXPECT_EQ(Complete("completion ''"), "bash\nzsh\n:\n");
  EXPECT_EQ(Complete("nosuchcommand ''"), ":\n");
}

TEST_F(CompletionTest, FlagValuesAndWhereTheShellCompletesFiles) {
  EXPECT_EQ(Complete("get -o y"), "yaml\n:\n");
  EXPECT_EQ(Complete("get --output=y"), "--output=yaml\n:\n");
  // A value that goes on: no space after it.
  EXPECT_EQ(Complete("get -o jsonpath"),
            "jsonpath=\njsonpath-file=\njsonpath-as-json=\n:nospace\n");
  EXPECT_EQ(Complete("version -o ''"), "json\nyaml\n:\n");
  EXPECT_EQ(Complete("get --cache ''"), ":dirs\n");
  EXPECT_EQ(Complete("get --snapshot ''"), ":files\n");
  EXPECT_EQ(Complete("snapshot verify ''"), ":files\n");
  EXPECT_EQ(Complete("snapshot create --cache c ''"), ":dirs\n");
  // A number has no candidates, and is not a file.
  EXPECT_EQ(Complete("demo --pods ''"), ":\n");
}

TEST_F(CompletionTest, ResourceTypesNamespacesAndNamesFromTheNamedCache) {
  const std::string c = " --cache " + Cache();
  EXPECT_EQ(Complete("get" + c + " ''"), "namespaces\tNamespace\nnodes\tNode\npods\tPod\n:\n");
  EXPECT_EQ(Complete("get --cache=" + Cache() + " no"), "nodes\tNode\n:\n");
  EXPECT_EQ(Complete("get" + c + " -n ns-"), "ns-0\nns-1\nns-2\n:\n");
  EXPECT_EQ(Complete("get nodes" + c + " ''"), "node-0\nnode-1\n:\n");
  EXPECT_EQ(Complete("get" + c + " no/"), "no/node-0\nno/node-1\n:\n");
  // Pods of the namespace given, of "default" when none is, of all with -A.
  const std::string in_ns1 = Complete("get po" + c + " -n ns-1 ''");
  const std::string all = Complete("get po -A" + c + " ''");
  EXPECT_EQ(Complete("get po" + c + " ''"), ":\n");
  EXPECT_GT(std::count(in_ns1.begin(), in_ns1.end(), '\n'), 2) << in_ns1;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 31) << all;
  EXPECT_LT(std::count(in_ns1.begin(), in_ns1.end(), '\n'), 31) << in_ns1;
  const std::string one = in_ns1.substr(0, in_ns1.find('\n'));
  CommandResult got = RunCommand(KcacheBin() + " get pod " + one + " -n ns-1" + c + " 2>&1");
  EXPECT_EQ(got.exit_code, 0) << "a completed name is one that get finds: " << got.output;
  // tree TYPE NAME: no third argument.
  EXPECT_EQ(Complete("tree nodes node-0" + c + " ''"), ":\n");
  // What cannot be read completes nothing, and says nothing.
  EXPECT_EQ(Complete("get --cache " + dir_->path() + "/absent ''"), ":\n");
  EXPECT_EQ(Complete("get --cache " + dir_->path() + "/absent -n ''"), ":\n");
}

TEST_F(CompletionTest, BashCompletesThroughItsScript) {
  const std::string k = KcacheBin();
  EXPECT_EQ(Bash(k + " sta"), "stats\n");
  EXPECT_EQ(Bash(k + " get --cache " + Cache() + " "), "namespaces\nnodes\npods\n");
  EXPECT_EQ(Bash(k + " get nodes --cache " + Cache() + " node-"), "node-0\nnode-1\n");
  // bash breaks words at "=": the reply is what follows it.
  EXPECT_EQ(Bash(k + " get --output=ya"), "yaml\n");
  std::ofstream(dir_->path() + "/before.kcs") << "x";
  EXPECT_EQ(Bash(k + " snapshot verify " + dir_->path() + "/bef"), dir_->path() + "/before.kcs\n");
  EXPECT_EQ(Bash(k + " get --snapshot=" + dir_->path() + "/bef"), dir_->path() + "/before.kcs\n");
}

TEST_F(CompletionTest, ZshCompletesThroughItsScript) {
  const std::string k = KcacheBin();
  EXPECT_EQ(Zsh(k + " get --cache " + Cache() + " \"\""),
            "namespaces:Namespace\nnodes:Node\npods:Pod\n");
  EXPECT_EQ(Zsh(k + " get -o jsonpath-f"), "jsonpath-file=\nNOSPACE\n");
  EXPECT_EQ(Zsh(k + " snapshot verify \"\""), "FILES\n");
  EXPECT_EQ(Zsh(k + " get --cache=/t"), "COMPSET -P *=\nFILES -/\n");
  // Each candidate with its description, as _describe shows them.
  EXPECT_EQ(Zsh(k + " rek"),
            "rekey:rotate the keys of a cache's encrypted resources, without a "
            "relist\n");
}

TEST_F(CompletionTest, ZshLoadsTheScriptFromItsFunctionPath) {
  // Installed as _kcache in $fpath, the file is the function's body: the
  // first TAB defines the function and completes.
  const std::string fpath = dir_->path() + "/fpath";
  CommandResult r = RunCommand("mkdir -p " + fpath + " && cp " + dir_->path() + "/kcache.zsh " +
                               fpath + "/_kcache && " + "zsh -f -c 'fpath=(" + fpath +
                               " $fpath); autoload -U _kcache; "
                               "_describe() { print -rl -- \"${(@P)4}\"; }; words=(" +
                               KcacheBin() +
                               " sy); "
                               "CURRENT=2; _kcache' 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "sync:mirror resources of a cluster into a cache and keep it current\n");
}

TEST_F(CompletionTest, TheCommandNamesItsShell) {
  CommandResult none = RunCommand(KcacheBin() + " completion 2>&1");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("error: completion: name the shell: bash or zsh"), std::string::npos)
      << none.output;
  CommandResult fish = RunCommand(KcacheBin() + " completion fish 2>&1");
  EXPECT_EQ(fish.exit_code, 2) << fish.output;
  CommandResult syntax = RunCommand(KcacheBin() + " completion bash | bash -n && " + KcacheBin() +
                                    " completion zsh | zsh -n 2>&1");
  EXPECT_EQ(syntax.exit_code, 0) << syntax.output;
}

}  // namespace
