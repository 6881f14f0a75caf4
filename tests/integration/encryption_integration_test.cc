// SPDX-License-Identifier: Apache-2.0

// Encryption at rest against the real kube-apiserver: `kcache sync` with a
// key-encryption key stores Secrets sealed (no file of the cache or of its
// snapshot holds their data), every reader needs the key and says so
// clearly without it, and `kcache rekey` rotates the keys without a relist.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "crypto/aead.h"
#include "integration/cluster.h"
#include "testing/command.h"
#include "testing/temp_dir.h"
#include "util/base64.h"

namespace kcache {
namespace {

using testing::Cluster;
using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunCommand;

constexpr char kPassword[] = "kcache-encryption-test-password-5c1e";
constexpr char kPlain[] = "kcache-encryption-test-plain-value-77";

std::string Kcache(const std::string& args) {
  const char* bin = std::getenv("KCACHE_BIN");
  EXPECT_NE(bin, nullptr) << "KCACHE_BIN is not set";
  return std::string(bin ? bin : "kcache") + " " + args + " 2>&1";
}

std::string Kubectl(const std::string& args) {
  return "kubectl --kubeconfig " + Cluster::Get().File("kubeconfig") + " " + args + " 2>&1";
}

// Whether any file under `path` (a directory or a file) holds `needle`.
bool AnyFileHolds(const std::string& path, const std::string& needle) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(path)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  } else {
    files.push_back(path);
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string WriteKey(const std::string& path) {
  std::ofstream(path) << Base64Encode(crypto::Key::Generate()->bytes()) << "\n";
  return path;
}

TEST(EncryptionIntegrationTest, SecretsSyncedWithAKeyAreSealedAndReadOnlyWithIt) {
  const std::string ns = Cluster::Get().Namespace("encrypt");
  for (const char* name : {"db", "api"}) {
    CommandResult created =
        RunCommand(Kubectl("create secret generic " + std::string(name) + " -n " + ns +
                           " --from-literal=password=" + kPassword));
    ASSERT_EQ(created.exit_code, 0) << created.output;
  }
  CommandResult map =
      RunCommand(Kubectl("create configmap settings -n " + ns + " --from-literal=v=" + kPlain));
  ASSERT_EQ(map.exit_code, 0) << map.output;

  testing::TempDir dir;
  const std::string cache = dir.Sub("cache"), key = WriteKey(dir.Sub("key")),
                    next = WriteKey(dir.Sub("next")), other = WriteKey(dir.Sub("other"));
  const std::string with_key = " --encryption-key-file " + key;
  const std::string sync = "sync secrets configmaps -n " + ns + " --until-synced --cache " + cache +
                           " --kubeconfig " + Cluster::Get().File("kubeconfig");
  CommandResult synced = RunCommand(Kcache(sync + with_key));
  ASSERT_EQ(synced.exit_code, 0) << synced.output;

  // The Secrets' data is in no file of the cache (the server sends it in
  // base64); the control finds the config map's, stored in the clear.
  const std::string encoded = Base64Encode(kPassword);
  EXPECT_TRUE(AnyFileHolds(cache, kPlain));
  EXPECT_FALSE(AnyFileHolds(cache, encoded));
  EXPECT_FALSE(AnyFileHolds(cache, kPassword));

  // kcache stats says, without the key, which resources are sealed.
  CommandResult stats = RunCommand(Kcache("stats --cache " + cache));
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("ENCRYPTED secrets (key-encryption key "), std::string::npos)
      << stats.output;
  EXPECT_NE(stats.output.find(", data key 1 of 1)\n"), std::string::npos) << stats.output;
  // Per namespace, a sealed resource is counted by its keys.
  EXPECT_NE(stats.output.find("   secrets      2         <encrypted>\n"), std::string::npos)
      << stats.output;

  // Without the key: plain resources read; Secrets fail, saying why.
  CommandResult maps = RunCommand(Kcache("get configmaps -n " + ns + " --cache " + cache));
  EXPECT_EQ(maps.exit_code, 0) << maps.output;
  EXPECT_THAT(maps.output, HasSubstr("settings"));
  CommandResult no_key = RunCommand(Kcache("get secrets -n " + ns + " --cache " + cache));
  EXPECT_EQ(no_key.exit_code, 1) << no_key.output;
  EXPECT_THAT(no_key.output, HasSubstr("is encrypted at rest, and no key-encryption key was given "
                                       "(give it with --encryption-key-file"));
  EXPECT_THAT(no_key.output, Not(HasSubstr(encoded)));
  // Another key: told apart from damage.
  CommandResult wrong = RunCommand(
      Kcache("get secrets -n " + ns + " --cache " + cache + " --encryption-key-file " + other));
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_THAT(wrong.output, HasSubstr("is not the one these data keys were wrapped with"));
  // With it: as kubectl shows them.
  CommandResult read = RunCommand(Kcache(
      "get secrets db -n " + ns + " -o jsonpath={.data.password} --cache " + cache + with_key));
  EXPECT_EQ(read.exit_code, 0) << read.output;
  EXPECT_EQ(read.output, encoded);
  CommandResult kubectl =
      RunCommand(Kubectl("get secrets db -n " + ns + " -o jsonpath={.data.password}"));
  EXPECT_EQ(read.output, kubectl.output);

  // A restart with the key resumes without a relist; without it, a sync
  // refuses to write Secrets in the clear.
  CommandResult again = RunCommand(Kcache(sync + with_key));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("resuming the watch from resourceVersion"));
  CommandResult keyless = RunCommand(Kcache(sync));
  EXPECT_NE(keyless.exit_code, 0) << keyless.output;
  EXPECT_THAT(keyless.output, HasSubstr("keyspace secrets is encrypted at rest"));

  // Served: without the key the encrypted resource is left out, saying
  // why; with it, kubectl reads the Secrets through the cache as from the
  // server.
  {
    testing::ServeProcess keyless_serve =
        testing::StartServe("--cache " + cache + " --serve-secrets --listen 127.0.0.1:0");
    ASSERT_FALSE(keyless_serve.url.empty()) << keyless_serve.banner;
    EXPECT_THAT(keyless_serve.banner, HasSubstr("secrets: encrypted at rest, served only with its "
                                                "key"));
  }
  {
    testing::ServeProcess served = testing::StartServe(
        "--cache " + cache + " --serve-secrets --listen 127.0.0.1:0" + with_key);
    ASSERT_FALSE(served.url.empty()) << served.banner;
    CommandResult through = RunCommand("kubectl --server " + served.url + " get secrets db -n " +
                                       ns + " -o jsonpath={.data.password} 2>&1");
    EXPECT_EQ(through.exit_code, 0) << through.output;
    EXPECT_EQ(through.output, encoded);
  }

  // A snapshot carries the sealed rows and the wrapped key: useless without
  // the key, whole with it.
  const std::string file = dir.Sub("snap.kcs");
  CommandResult exported =
      RunCommand(Kcache("snapshot export --cache " + cache + " " + file + with_key));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_FALSE(AnyFileHolds(file, encoded));
  CommandResult verify = RunCommand(Kcache("snapshot verify " + file));
  EXPECT_EQ(verify.exit_code, 1) << verify.output;
  EXPECT_THAT(verify.output, HasSubstr("no key-encryption key was given"));
  EXPECT_EQ(RunCommand(Kcache("snapshot verify " + file + with_key)).exit_code, 0);
  CommandResult refused =
      RunCommand(Kcache("snapshot import --cache " + dir.Sub("refused") + " " + file));
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("refused")));
  CommandResult from_file = RunCommand(Kcache(
      "get secrets api -n " + ns + " -o jsonpath={.data.password} --snapshot " + file + with_key));
  EXPECT_EQ(from_file.output, encoded);

  // Rekey: a new data key and a new key-encryption key; the old key no
  // longer opens the cache, the new one reads every Secret.
  CommandResult rekeyed = RunCommand(
      Kcache("rekey --cache " + cache + with_key + " --new-encryption-key-file " + next));
  ASSERT_EQ(rekeyed.exit_code, 0) << rekeyed.output;
  EXPECT_THAT(rekeyed.output, HasSubstr("data key 2 seals secrets"));
  EXPECT_EQ(RunCommand(Kcache("get secrets -n " + ns + " --cache " + cache + with_key)).exit_code,
            1);
  CommandResult after = RunCommand(
      Kcache("get secrets -n " + ns + " --cache " + cache + " --encryption-key-file " + next));
  EXPECT_EQ(after.exit_code, 0) << after.output;
  EXPECT_THAT(after.output, HasSubstr("db"));
  EXPECT_THAT(after.output, HasSubstr("api"));
  EXPECT_FALSE(AnyFileHolds(cache, encoded));
}

}  // namespace
}  // namespace kcache
