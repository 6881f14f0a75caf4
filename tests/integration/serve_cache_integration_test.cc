// SPDX-License-Identifier: Apache-2.0

// One `kcache sync` from the real kube-apiserver, many readers through
// `kcache serve --cache`: a client-go v1.20 informer (the informer
// benchmark's peer, tools/bench/informer-peer) and kcache's own informer
// list and watch the served cache and follow what changes on the API
// server, as the sync writes it; then client-go syncs from a snapshot of
// that cache through `kcache serve --snapshot`.
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "integration/cluster.h"
#include "kcache/indexer.h"
#include "kcache/informer.h"
#include "kcache/reflector.h"
#include "kcache/rest_client.h"
#include "testing/command.h"
#include "testing/eventually.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Cluster;
using testing::Eventually;
using testing::RunCommand;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Waits up to `seconds` for `path` to contain `text`.
bool WaitForText(const std::string& path, const std::string& text, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (Slurp(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string PodJson(const std::string& ns, const std::string& name) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" +
         ns + R"("},"spec":{"containers":[{"name":"app","image":"registry.example.com/app:v1"}]}})";
}

// The kcache binary and the client-go peer (built, or found cached, by
// tools/bench/build-peer); a test failure if either is missing.
struct Binaries {
  std::string kcache, peer;
};
Binaries FindBinaries() {
  const char* bin = std::getenv("KCACHE_BIN");
  const char* source = std::getenv("KCACHE_SOURCE_DIR");
  if (!bin || !source) {
    ADD_FAILURE() << "KCACHE_BIN and KCACHE_SOURCE_DIR must be set";
    return {};
  }
  auto built = RunCommand(std::string(source) + "/tools/bench/build-peer informer-peer");
  EXPECT_EQ(built.exit_code, 0) << built.output;
  std::string peer = built.output.substr(0, built.output.find_last_not_of("\n") + 1);
  return {bin, peer.substr(peer.rfind('\n') + 1)};
}

TEST(ServeCacheIntegrationTest, ClientGoAndKcacheInformersFollowTheApiServerThroughServe) {
  Cluster& c = Cluster::Get();
  const Binaries binaries = FindBinaries();
  const std::string &kcache = binaries.kcache, &peer = binaries.peer;
  ASSERT_FALSE(HasFailure());

  const std::string ns = c.Namespace("serve-peer");
  auto admin = c.Admin();
  const ResourceRef pods{{"", "v1", "pods"}, true, ns};
  for (int i = 0; i < 30; ++i) {
    ASSERT_OK(admin->Create(pods, PodJson(ns, "before-" + std::to_string(i))));
  }
  testing::TempDir dir;
  const std::string env = "export KUBECONFIG=" + c.File("kubeconfig") + "; ";
  auto sync = RunCommand(env + "(" + kcache + " sync pods --cache " + dir.Sub("cache") + " >" +
                         dir.Sub("sync.log") + " 2>&1 & echo $! >" + dir.Sub("sync.pid") + ")");
  ASSERT_EQ(sync.exit_code, 0) << sync.output;
  ASSERT_TRUE(WaitForText(dir.Sub("sync.log"), "pods: synced", 60)) << Slurp(dir.Sub("sync.log"));
  // Starts `kcache serve` of `what` in the background; its URL ("" if it
  // did not start), its pid in NAME.pid.
  auto serve = [&](const std::string& what, const std::string& name) -> std::string {
    auto started =
        RunCommand("(" + kcache + " serve --listen 127.0.0.1:0 " + what + " >" +
                   dir.Sub(name + ".log") + " 2>&1 & echo $! >" + dir.Sub(name + ".pid") + ")");
    EXPECT_EQ(started.exit_code, 0) << started.output;
    if (!WaitForText(dir.Sub(name + ".log"), "serving on ", 30)) return "";
    const std::string log = Slurp(dir.Sub(name + ".log"));
    const size_t at = log.find("serving on ") + 11;
    return log.substr(at, log.find(' ', at) - at);
  };
  const std::string url = serve("--cache " + dir.Sub("cache"), "serve");
  ASSERT_FALSE(url.empty()) << Slurp(dir.Sub("serve.log"));

  // client-go, through the served cache.
  auto started = RunCommand("(" + peer + " --server " + url + " --follow-until " + ns +
                            "/late --follow-timeout 90s >" + dir.Sub("peer.out") + " 2>" +
                            dir.Sub("peer.err") + " &)");
  ASSERT_EQ(started.exit_code, 0) << started.output;
  ASSERT_TRUE(WaitForText(dir.Sub("peer.out"), "synced_seconds", 60))
      << Slurp(dir.Sub("peer.out")) << Slurp(dir.Sub("peer.err"));
  auto synced = nlohmann::json::parse(
      Slurp(dir.Sub("peer.out")).substr(0, Slurp(dir.Sub("peer.out")).find('\n')));
  EXPECT_GE(synced["objects"].get<int>(), 30) << synced.dump();

  // kcache's informer, through the same server.
  RestConfig config;
  config.server = url;
  auto client = RestClient::Create(config);
  ASSERT_OK(client);
  auto store = NewMemoryIndexer();
  auto informer = SharedIndexInformer::Create(NewListWatch(*client, pods), store, {});
  ASSERT_OK(informer->Start());
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(60)));
  EXPECT_EQ(*store->Size(), 30u);

  // A change on the API server reaches both: API server -> sync -> cache
  // (its journal) -> serve -> each informer's watch.
  ASSERT_OK(admin->Create(pods, PodJson(ns, "late")));
  ASSERT_OK(admin->Delete(pods, "before-0"));
  EXPECT_TRUE(WaitForText(dir.Sub("peer.out"), "\"followed\"", 60))
      << Slurp(dir.Sub("peer.out")) << Slurp(dir.Sub("peer.err"));
  EXPECT_TRUE(Eventually([&] {
    return store->GetByKey(ns + "/late").value() != nullptr &&
           store->GetByKey(ns + "/before-0").value() == nullptr;
  }));
  EXPECT_EQ(informer->stats().lists, 1u);
  informer->Stop();

  // The cache exported while the sync runs, then served from the file in
  // place: client-go syncs from it, with the objects the file holds.
  const std::string file = dir.Sub("pods.kcs");
  auto exported =
      RunCommand(kcache + " snapshot export --cache " + dir.Sub("cache") + " " + file + " 2>&1");
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  RunCommand("kill $(cat " + dir.Sub("serve.pid") + ") $(cat " + dir.Sub("sync.pid") + ")");
  auto count = RunCommand(kcache + " get pods -A --no-headers --snapshot " + file + " | wc -l");
  ASSERT_EQ(count.exit_code, 0) << count.output;
  const int in_file = std::stoi(count.output);
  EXPECT_GE(in_file, 30);
  const std::string snap_url = serve("--snapshot " + file, "snap");
  ASSERT_FALSE(snap_url.empty()) << Slurp(dir.Sub("snap.log"));
  auto from_file = RunCommand(peer + " --server " + snap_url + " 2>&1");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  auto file_synced = nlohmann::json::parse(from_file.output.substr(0, from_file.output.find('\n')));
  EXPECT_EQ(file_synced["objects"].get<int>(), in_file) << file_synced.dump();
  RunCommand("kill $(cat " + dir.Sub("snap.pid") + ")");
}

// The client-go v1.20 informer through a served cache that requires tokens
// over TLS: a token that reads pods everywhere syncs it; one bound to a
// namespace is refused its cluster-wide list with kube-apiserver's Forbidden,
// which client-go's reflector reports as it would against RBAC.
TEST(ServeCacheIntegrationTest, AClientGoInformerReadsWhatItsTokenGrants) {
  Cluster& c = Cluster::Get();
  const Binaries binaries = FindBinaries();
  const std::string &kcache = binaries.kcache, &peer = binaries.peer;
  ASSERT_FALSE(HasFailure());

  const std::string ns = c.Namespace("serve-tokens");
  auto admin = c.Admin();
  for (int i = 0; i < 12; ++i) {
    ASSERT_OK(admin->Create({{"", "v1", "pods"}, true, ns}, PodJson(ns, "p-" + std::to_string(i))));
  }
  testing::TempDir dir;
  auto sync = RunCommand("KUBECONFIG=" + c.File("kubeconfig") + " " + kcache +
                         " sync pods --cache " + dir.Sub("cache") + " --until-synced 2>&1");
  ASSERT_EQ(sync.exit_code, 0) << sync.output;
  const std::string cert = dir.Sub("crt"), key = dir.Sub("key");
  auto made = testing::MakeServingCertificate(cert, key);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::ofstream(dir.Sub("tokens"))
      << "reader\nteam resources=pods namespaces=" << ns
      << "\nbound name=nobody resources=pods namespaces=" << ns << "\n";
  testing::ServeProcess served = testing::StartServe(
      "--cache " + dir.Sub("cache") + " --listen 127.0.0.1:0 --token-file " + dir.Sub("tokens") +
      " --tls-cert-file " + cert + " --tls-private-key-file " + key);
  ASSERT_FALSE(served.url.empty()) << served.banner;
  auto kubeconfig = [&](const std::string& token) {
    const std::string path = dir.Sub("kubeconfig-" + token);
    std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                        << "    server: " << served.url << "\n    certificate-authority: " << cert
                        << "\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n"
                        << "current-context: c\nusers:\n- name: u\n  user: {token: " << token
                        << "}\n";
    return path;
  };
  auto reader =
      RunCommand("timeout 60 " + peer + " --kubeconfig " + kubeconfig("reader") + " 2>&1");
  ASSERT_EQ(reader.exit_code, 0) << reader.output;
  auto synced = nlohmann::json::parse(reader.output.substr(0, reader.output.find('\n')));
  EXPECT_GE(synced["objects"].get<int>(), 12) << synced.dump();
  // The peer waits for a sync that cannot come; its reflector says why.
  auto team = RunCommand("timeout 5 " + peer + " --kubeconfig " + kubeconfig("team") + " 2>&1");
  EXPECT_NE(team.exit_code, 0) << team.output;
  EXPECT_NE(team.output.find("pods is forbidden: User \"token-2\" cannot list resource \"pods\" "
                             "in API group \"\" at the cluster scope"),
            std::string::npos)
      << team.output;

  // The 403s say what the real kube-apiserver says to its user "nobody" (no
  // grant at all), field for field, for requests outside the grant. (A
  // resource the cache does not hold is 404 here, 403 there: docs/serve.md.)
  auto status_of = [&](const std::string& curl) {
    auto r = RunCommand("curl -s " + curl);
    nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << curl << "\n" << r.output;
    return j;
  };
  for (const std::string path : {"/api/v1/namespaces/kube-system/pods", "/api/v1/pods",
                                 "/api/v1/namespaces/kube-system/pods/some-pod",
                                 "/api/v1/namespaces/kube-system/pods?watch=1"}) {
    const nlohmann::json real = status_of("-k -H 'Authorization: Bearer nobody-" + c.token() +
                                          "' '" + c.server() + path + "'");
    const nlohmann::json ours = status_of(
        "--cacert " + cert + " -H 'Authorization: Bearer bound' '" + served.url + path + "'");
    EXPECT_EQ(real["code"], 403) << path << ": " << real.dump();
    for (const char* field : {"kind", "status", "message", "reason", "details", "code"}) {
      EXPECT_EQ(ours[field], real[field]) << path << ": " << field;
    }
  }
}

}  // namespace
}  // namespace kcache
