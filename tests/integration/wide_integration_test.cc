// SPDX-License-Identifier: Apache-2.0

// Invariant 7 at width, against the real kube-apiserver: `kcache sync` of 200
// custom resource types, first and again over its cache. Requests are
// counted from the apiserver's /metrics (never timed): a start asks nothing
// per type beyond the type's own list or probe and watch; a restart makes no
// full LIST; the cache converges on what changed while it was down; and the
// process's threads stay within the budget documented in
// docs/architecture.md.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/cluster.h"
#include "kcache/cache.h"
#include "kcache/discovery.h"
#include "kcache/informer_factory.h"
#include "testing/command.h"
#include "testing/eventually.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Cluster;

constexpr int kTypes = 200;
constexpr int kGroups = 4;

std::string Group(int i) { return "g" + std::to_string(i % kGroups) + ".wide.kcache.io"; }
std::string Plural(int i) { return "wide" + std::to_string(i) + "s"; }
ResourceRef Wide(int i, const std::string& ns) {
  return ResourceRef{GroupVersionResource{Group(i), "v1", Plural(i)}, true, ns};
}

// A namespaced custom resource type of one version, v1, with any fields.
nlohmann::json Crd(const std::string& group, const std::string& plural, const std::string& singular,
                   const std::string& kind) {
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", plural + "." + group}}},
          {"spec",
           {{"group", group},
            {"scope", "Namespaced"},
            {"names", {{"plural", plural}, {"singular", singular}, {"kind", kind}}},
            {"versions",
             {{{"name", "v1"},
               {"served", true},
               {"storage", true},
               {"schema",
                {{"openAPIV3Schema",
                  {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}};
}

// Requests the apiserver has served, by "VERB resource" (resource requests
// only).
std::map<std::string, double> Requests() {
  std::map<std::string, double> out;
  auto body = Cluster::Get().Admin()->Get("/metrics");
  EXPECT_OK(body);
  std::istringstream in(body.ok() ? *body : "");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("apiserver_request_total{", 0) != 0) continue;
    auto label = [&](const std::string& name) {
      const std::string key = name + "=\"";
      size_t at = line.find(key);
      if (at == std::string::npos) return std::string();
      at += key.size();
      return line.substr(at, line.find('"', at) - at);
    };
    if (label("resource").empty()) continue;
    out[label("verb") + " " + label("resource")] += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

// What one `kcache sync` run asked for and held.
struct SyncRun {
  int exit_code = -1;
  std::string log;
  int peak_threads = 0;
  std::map<std::string, double> requests;  // by "VERB resource", during the run
  // Requests of the wide types by verb.
  double Wide(const std::string& verb) const {
    double n = 0;
    for (const auto& [k, v] : requests) {
      if (k.rfind(verb + " wide", 0) == 0) n += v;
    }
    return n;
  }
  double Of(const std::string& key) const {
    auto it = requests.find(key);
    return it == requests.end() ? 0 : it->second;
  }
};

// `kcache sync` of every wide type, or of `what` (its arguments).
SyncRun Sync(const std::string& cache, std::string what = "") {
  if (what.empty()) {
    for (int i = 0; i < kTypes; ++i) what += " " + Plural(i) + "." + Group(i);
  }
  const std::map<std::string, double> before = Requests();
  SyncRun run;
  testing::Background b = testing::StartCommand(
      testing::KcacheBin() + " sync " + what + " --kubeconfig " +
      Cluster::Get().File("kubeconfig") + " --cache " + cache + " --until-synced");
  EXPECT_GT(b.pid, 0);
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    const std::string status = "/proc/" + std::to_string(b.pid) + "/status";
    while (!done) {
      std::ifstream in(status);
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("Threads:", 0) == 0)
          run.peak_threads = std::max(run.peak_threads, std::stoi(line.substr(8)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  run.log = testing::Drain(b.out);
  int status = 0;
  waitpid(b.pid, &status, 0);
  done = true;
  sampler.join();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (const auto& [k, v] : Requests()) {
    auto it = before.find(k);
    const double d = v - (it == before.end() ? 0 : it->second);
    if (d > 0) run.requests[k] = d;
  }
  return run;
}

std::string Describe(const SyncRun& r) {
  std::string out = "exit " + std::to_string(r.exit_code) + ", " + std::to_string(r.peak_threads) +
                    " threads; requests:";
  std::map<std::string, double> grouped;  // the wide types' as one
  for (const auto& [k, v] : r.requests) {
    const size_t space = k.find(' ');
    grouped[k.compare(space + 1, 4, "wide") == 0 ? k.substr(0, space) + " (wide types)" : k] += v;
  }
  for (const auto& [k, v] : grouped) out += " " + k + "=" + std::to_string(int(v)) + ";";
  return out + "\n" + r.log.substr(r.log.size() > 4000 ? r.log.size() - 4000 : 0);
}

class WideIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto api = Cluster::Get().Admin();
    ns_ = new std::string(Cluster::Get().Namespace("wide"));
    const ResourceRef crds{{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, false, ""};
    for (int i = 0; i < kTypes; ++i) {
      ASSERT_OK(api->Create(
          crds,
          Crd(Group(i), Plural(i), "wide" + std::to_string(i), "Wide" + std::to_string(i)).dump()));
    }
    // Served once discovery lists them all.
    ASSERT_TRUE(testing::Eventually([&] {
      auto d = Discovery::Fetch(*api);
      if (!d.ok()) return false;
      for (int i = 0; i < kTypes; ++i) {
        if (!(*d)->Resolve(Plural(i) + "." + Group(i)).ok()) return false;
      }
      return true;
    })) << "the custom resource types were not served in time";
    for (int i = 0; i < kTypes; ++i) Create(i, "obj-a");
  }
  static void TearDownTestSuite() { delete ns_; }

  static void Create(int i, const std::string& name) {
    nlohmann::json o = {{"apiVersion", Group(i) + "/v1"},
                        {"kind", "Wide" + std::to_string(i)},
                        {"metadata", {{"name", name}}},
                        {"spec", {{"n", i}}}};
    // A type just established may not be served for a moment.
    StatusOr<ObjectPtr> created = Status::Unavailable("not tried");
    for (int attempt = 0; attempt < 100; ++attempt) {
      created = Cluster::Get().Admin()->Create(Wide(i, *ns_), o.dump());
      if (created.ok() || created.status().code() == StatusCode::kAlreadyExists) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_OK(created);
  }

  // Defines the namespaced type `plural`.`group` (v1) and creates `name` of
  // it once it is served; false if it is not served in time.
  static bool DefineAndCreate(const std::string& group, const std::string& plural,
                              const std::string& kind, const std::string& name) {
    auto api = Cluster::Get().Admin();
    const ResourceRef crds{{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, false, ""};
    std::string singular;
    for (char c : kind) singular += static_cast<char>(std::tolower(c));
    if (!api->Create(crds, Crd(group, plural, singular, kind).dump()).ok()) return false;
    const ResourceRef ref{{group, "v1", plural}, true, *ns_};
    return testing::Eventually([&] {
      nlohmann::json o = {
          {"apiVersion", group + "/v1"}, {"kind", kind}, {"metadata", {{"name", name}}}};
      auto created = api->Create(ref, o.dump());
      return created.ok() || created.status().code() == StatusCode::kAlreadyExists;
    });
  }

  static std::string* ns_;
};
std::string* WideIntegrationTest::ns_ = nullptr;

TEST_F(WideIntegrationTest, StartsCostNoRequestPerTypeBeyondItsListAndWatch) {
  testing::TempDir dir;
  const std::string cache = dir.Sub("cache");

  SyncRun first = Sync(cache);
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  std::cout << "first sync: " << Describe(first).substr(0, Describe(first).find('\n')) << "\n";
  EXPECT_NE(first.log.find(std::to_string(kTypes) + " resource(s), " + std::to_string(kTypes) +
                           " objects in the cache"),
            std::string::npos)
      << Describe(first);
  // One LIST of each type, and one watch after it: v1.20 refuses a
  // streaming list, which the first type learns for all (a few more if a
  // loaded machine's watch breaks and is opened again).
  EXPECT_EQ(first.Wide("LIST"), kTypes) << Describe(first);
  // (Fewer when the sync is synced, and stops, before every watch opened.)
  EXPECT_GE(first.Wide("WATCH"), 1) << Describe(first);
  EXPECT_LE(first.Wide("WATCH"), kTypes + 10) << Describe(first);
  // The definitions' columns: one LIST, no GET of each.
  EXPECT_EQ(first.Of("LIST customresourcedefinitions"), 1) << Describe(first);
  EXPECT_EQ(first.Of("GET customresourcedefinitions"), 0) << Describe(first);
  // The cluster's identity (the kube-system namespace): asked by the sync's
  // check and shared by every reflector, not once per type.
  // (An answer is reused for a second, so a start spread over more asks
  // again: a bound far under one per type.)
  EXPECT_LE(first.Of("GET namespaces"), 10) << Describe(first);

  // While it is down: one object changes in each of two types.
  Create(7, "obj-b");
  ASSERT_OK(Cluster::Get().Admin()->Delete(Wide(11, *ns_), "obj-a"));

  SyncRun restart = Sync(cache);
  ASSERT_EQ(restart.exit_code, 0) << Describe(restart);
  std::cout << "restart: " << Describe(restart).substr(0, Describe(restart).find('\n')) << "\n";
  // Invariant 3: every type resumes with no LIST of its own; one limit=1
  // probe serves the types that start together (a few if they start apart).
  EXPECT_GE(restart.Wide("LIST"), 1) << Describe(restart);
  EXPECT_LE(restart.Wide("LIST"), 5) << Describe(restart);
  // A watch a loaded machine sees break is opened again, without a list.
  // (Fewer when the sync is synced, and stops, before every watch opened.)
  EXPECT_GE(restart.Wide("WATCH"), 1) << Describe(restart);
  EXPECT_LE(restart.Wide("WATCH"), kTypes + 10) << Describe(restart);
  EXPECT_EQ(restart.log.find("LIST of"), std::string::npos) << Describe(restart);
  EXPECT_EQ(restart.Of("GET customresourcedefinitions"), 0) << Describe(restart);
  EXPECT_LE(restart.Of("GET namespaces"), 10) << Describe(restart);
  EXPECT_NE(restart.log.find(std::to_string(kTypes) + " resource(s), " + std::to_string(kTypes) +
                             " objects in the cache"),
            std::string::npos)
      << "one added, one deleted\n"
      << Describe(restart);
  // Converged: what changed while it was down is in the cache.
  auto got =
      testing::RunCommand(testing::KcacheBin() + " get " + Plural(7) + "." + Group(7) + "," +
                          Plural(11) + "." + Group(11) + " -A -o name --cache " + cache + " 2>&1");
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("wide7." + Group(7) + "/obj-b"), std::string::npos) << got.output;
  EXPECT_EQ(got.output.find("wide11." + Group(11) + "/obj-a"), std::string::npos) << got.output;

  // The thread budget (invariant 7, docs/architecture.md): reflectors are
  // fibers on a few carriers; every thread of the process, RocksDB's
  // included, whatever the number of types.
  EXPECT_LE(first.peak_threads, 32) << Describe(first);
  EXPECT_LE(restart.peak_threads, 32) << Describe(restart);
}

// kcache sync --all syncs what `kubectl api-resources --verbs=list,watch`
// lists, but secrets (no --encrypt key), --exclude and the second group of
// one storage (events.events.k8s.io, ingresses.extensions in v1.20), each
// said; cronjobs, served by batch/v1beta1 only, are found beside batch/v1.
TEST_F(WideIntegrationTest, SyncAllSyncsWhatKubectlListsAndWatchesOnce) {
  testing::TempDir dir;
  testing::CommandResult kubectl =
      testing::RunCommand("kubectl --kubeconfig " + Cluster::Get().File("kubeconfig") +
                          " api-resources --verbs=list,watch -o name 2>&1");
  ASSERT_EQ(kubectl.exit_code, 0) << kubectl.output;
  std::set<std::string> want;
  std::istringstream lines(kubectl.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) want.insert(line);
  }
  ASSERT_TRUE(want.count("cronjobs.batch")) << kubectl.output;
  const std::string excluded = Plural(3) + "." + Group(3);
  for (const std::string& gone : {std::string("secrets"), std::string("events.events.k8s.io"),
                                  std::string("ingresses.extensions"), excluded}) {
    EXPECT_EQ(want.erase(gone), 1u) << gone << " is not served: " << kubectl.output;
  }

  SyncRun run = Sync(dir.Sub("cache"), "--all --exclude " + excluded);
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  std::set<std::string> got;
  std::istringstream log(run.log);
  for (std::string line; std::getline(log, line);) {
    for (const char* end : {": stopped at resourceVersion", ": stopped with no resume point"}) {
      const size_t at = line.find(end);
      const size_t space = line.find(' ');
      if (at != std::string::npos) got.insert(line.substr(space + 1, at - space - 1));
    }
  }
  EXPECT_EQ(got, want) << Describe(run);
  for (const char* said :
       {"secrets: not synced", "events.events.k8s.io: the same objects as events",
        "ingresses.extensions: the same objects as ingresses.networking.k8s.io"}) {
    EXPECT_NE(run.log.find(said), std::string::npos) << said << "\n" << Describe(run);
  }
  EXPECT_LE(run.peak_threads, 32) << Describe(run);
}

// `kcache sync --all` follows the server's resources while it runs: a
// CustomResourceDefinition created gets an informer (and its objects synced),
// one deleted loses it once its objects' deletions are applied, the keyspace
// kept (InformerFactory::ForAllResources).
TEST_F(WideIntegrationTest, SyncAllFollowsDefinitionsCreatedAndDeleted) {
  auto api = Cluster::Get().Admin();
  const ResourceRef crds{{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, false, ""};
  testing::TempDir dir;
  const std::string cache = dir.Sub("cache"), log = dir.Sub("log");
  testing::Background sync = testing::StartCommand(
      testing::KcacheBin() + " sync --all --kubeconfig " + Cluster::Get().File("kubeconfig") +
      " --cache " + cache + " > " + log + " 2>&1");
  ASSERT_GT(sync.pid, 0);
  auto said = [&](const std::string& text) {
    return testing::RunCommand("cat " + log).output.find(text) != std::string::npos;
  };
  ASSERT_TRUE(testing::Eventually([&] { return said("syncing "); }, std::chrono::seconds(60)))
      << testing::RunCommand("cat " + log).output;
  auto names = [&](const std::string& resource) {
    return testing::RunCommand(testing::KcacheBin() + " get " + resource + " -A -o name --cache " +
                               cache + " 2>/dev/null")
        .output;
  };

  ASSERT_TRUE(DefineAndCreate("late.kcache.io", "lates", "Late", "late-a"))
      << "the type was not served in time";
  EXPECT_TRUE(testing::Eventually([&] { return said("lates.late.kcache.io: new on the server"); }))
      << testing::RunCommand("cat " + log).output;
  EXPECT_TRUE(testing::Eventually([&] {
    return names("lates.late.kcache.io") == "late.late.kcache.io/late-a\n";
  })) << names("lates.late.kcache.io");

  ASSERT_OK(api->Delete(crds, "lates.late.kcache.io"));
  EXPECT_TRUE(testing::Eventually([&] { return said("lates.late.kcache.io: no longer served"); },
                                  std::chrono::seconds(60)))
      << testing::RunCommand("cat " + log).output;
  // Its objects' deletions were applied before the informer stopped.
  EXPECT_EQ(names("lates.late.kcache.io"), "");
  Create(2, "after-the-late-type");
  EXPECT_TRUE(testing::Eventually([&] {
    return names(Plural(2) + "." + Group(2)).find("after-the-late-type") != std::string::npos;
  })) << "the other types go on";
  EXPECT_EQ(testing::Stop(sync, SIGINT), 0) << testing::RunCommand("cat " + log).output;
}

// The same for library users: InformerFactory::ForAllResources gives a
// resource that appears an informer, started, and removes it once its
// definition is deleted, telling on_change of both.
TEST_F(WideIntegrationTest, TheFactoryFollowsResourcesAsTheyComeAndGo) {
  auto api = Cluster::Get().Admin();
  const ResourceRef crds{{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, false, ""};
  testing::TempDir dir;
  auto cache = Cache::Open(dir.Sub("cache"));
  ASSERT_OK(cache);
  auto factory = InformerFactory::Create(api, *cache);
  std::mutex mu;
  std::vector<std::string> told;  // guarded by mu
  AllResourcesOptions all;
  all.select = [](const Discovery&, const ApiResource& r) {
    return r.group == "lib.kcache.io" || r.group == Group(0);
  };
  all.on_change = [&](const ApiResource& r, bool added, const Status& error) {
    std::lock_guard l(mu);
    told.push_back((error.ok() ? (added ? "added " : "removed ") : "error ") +
                   r.group_resource().String());
  };
  ASSERT_OK(factory->ForAllResources(all));
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(std::chrono::seconds(30)));
  const std::string first = Plural(0) + "." + Group(0);
  EXPECT_TRUE(factory->informers().count(first));
  EXPECT_EQ(factory->ForAllResources(all).code(), StatusCode::kFailedPrecondition);

  ASSERT_TRUE(DefineAndCreate("lib.kcache.io", "libs", "Lib", "lib-a"))
      << "the type was not served in time";
  ASSERT_TRUE(testing::Eventually([&] {
    auto informers = factory->informers();
    auto it = informers.find("libs.lib.kcache.io");
    return it != informers.end() && it->second->GetIndexer()->Size().value_or(0) == 1;
  })) << "no informer of the new type, or it did not sync its object";

  ASSERT_OK(api->Delete(crds, "libs.lib.kcache.io"));
  EXPECT_TRUE(testing::Eventually([&] { return !factory->informers().count("libs.lib.kcache.io"); },
                                  std::chrono::seconds(60)));
  EXPECT_TRUE(factory->informers().count(first));
  const std::vector<std::string> want = {"added libs.lib.kcache.io", "removed libs.lib.kcache.io"};
  EXPECT_TRUE(testing::Eventually([&] {
    std::lock_guard l(mu);
    return told == want;
  }));
  std::lock_guard l(mu);
  EXPECT_EQ(told, want);
}

// A CustomResourceDefinition deleted while its type is synced: the API
// server deletes its objects, which the watch applies; then its relist is
// answered 404 and retried, and the sync goes on with every other type
// (docs/reliability.md).
TEST_F(WideIntegrationTest, ATypeDeletedWhileSyncedEmptiesAndTheOthersGoOn) {
  auto api = Cluster::Get().Admin();
  const ResourceRef crds{{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, false, ""};
  const ResourceRef gones{{"gone.kcache.io", "v1", "gones"}, true, *ns_};
  ASSERT_OK(api->Create(crds, Crd("gone.kcache.io", "gones", "gone", "Gone").dump()));
  ASSERT_TRUE(testing::Eventually([&] {
    for (const char* name : {"gone-a", "gone-b"}) {
      nlohmann::json o = {
          {"apiVersion", "gone.kcache.io/v1"}, {"kind", "Gone"}, {"metadata", {{"name", name}}}};
      auto created = api->Create(gones, o.dump());
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) return false;
    }
    return true;
  })) << "the type was not served in time";

  testing::TempDir dir;
  const std::string cache = dir.Sub("cache");
  testing::Background sync =
      testing::StartCommand(testing::KcacheBin() + " sync gones.gone.kcache.io " + Plural(5) + "." +
                            Group(5) + " --kubeconfig " + Cluster::Get().File("kubeconfig") +
                            " --cache " + cache + " > " + dir.Sub("log") + " 2>&1");
  ASSERT_GT(sync.pid, 0);
  auto names = [&](const std::string& resource) {
    return testing::RunCommand(testing::KcacheBin() + " get " + resource + " -A -o name --cache " +
                               cache + " 2>/dev/null")
        .output;
  };
  EXPECT_TRUE(testing::Eventually([&] {
    return names("gones.gone.kcache.io") ==
           "gone.gone.kcache.io/gone-a\ngone.gone.kcache.io/gone-b\n";
  })) << names("gones.gone.kcache.io");

  ASSERT_OK(api->Delete(crds, "gones.gone.kcache.io"));
  EXPECT_TRUE(testing::Eventually([&] { return names("gones.gone.kcache.io").empty(); }))
      << "the deletions were applied: " << names("gones.gone.kcache.io");
  Create(5, "after-the-deletion");
  EXPECT_TRUE(testing::Eventually([&] {
    return names(Plural(5) + "." + Group(5)).find("after-the-deletion") != std::string::npos;
  })) << "the other type goes on: "
      << names(Plural(5) + "." + Group(5));
  EXPECT_TRUE(testing::Eventually([&] {
    return testing::RunCommand("cat " + dir.Sub("log")).output.find("404") != std::string::npos;
  })) << "the relist's 404 is said";
  EXPECT_EQ(testing::Stop(sync, SIGINT), 0) << testing::RunCommand("cat " + dir.Sub("log")).output;
}

}  // namespace
}  // namespace kcache
