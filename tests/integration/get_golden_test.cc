// kcache get against kubectl get, byte for byte: the objects of
// tests/integration/golden/objects.yaml go into the real kube-apiserver,
// `kcache sync` copies them into a cache, and every form in
// golden/forms.txt runs through both tools. Standard output and exit codes
// must be identical, and standard error too except on forms marked "~".
//
// AGE cells count seconds, so a form whose output changed between two
// kubectl runs around the kcache run may match either of them.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

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
    golden_ = std::getenv("KCACHE_GOLDEN_DIR");
    kcache_ = std::getenv("KCACHE_BIN");
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

}  // namespace
}  // namespace kcache
