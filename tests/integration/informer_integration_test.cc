// SPDX-License-Identifier: Apache-2.0

// Informers and `kcache sync` against the real kube-apiserver: the cache and
// the handlers follow changes; SIGKILL and restart resume without a LIST
// (counted by the apiserver's /metrics); an expired checkpoint relists once.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "integration/cluster.h"
#include "integration/configmaps.h"
#include "kcache/cache.h"
#include "kcache/informer.h"
#include "kcache/informer_factory.h"
#include "testing/process_stats.h"
#include "testing/recording_handler.h"
#include "testing/serve_fixture.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::Api;
using testing::CacheState;
using testing::Cluster;
using testing::ConfigMapJson;
using testing::ConfigMaps;
using testing::Eventually;
using testing::SyncProcess;

// Applies every handler call to a name -> resourceVersion map.
class Mirror final : public ResourceEventHandler {
 public:
  void OnAdd(const ObjectPtr& o, bool) override { Set(o->name(), o->resource_version()); }
  void OnUpdate(const ObjectPtr&, const ObjectPtr& b) override {
    Set(b->name(), b->resource_version());
  }
  void OnDelete(const DeletedObject& d) override {
    std::string name;
    if (auto* t = std::get_if<DeletedFinalStateUnknown>(&d)) {
      name = t->key.substr(t->key.find('/') + 1);
    } else {
      name = std::get<ObjectPtr>(d)->name();
    }
    std::lock_guard l(mu_);
    state_.erase(name);
  }
  std::map<std::string, std::string> state() const {
    std::lock_guard l(mu_);
    return state_;
  }

 private:
  void Set(const std::string& name, const std::string& rv) {
    std::lock_guard l(mu_);
    state_[name] = rv;
  }
  mutable std::mutex mu_;
  std::map<std::string, std::string> state_;
};

InformerOptions Options() {
  InformerOptions o;
  o.reflector.backoff_initial = std::chrono::milliseconds(50);
  o.reflector.backoff_max = std::chrono::milliseconds(500);
  return o;
}

// A factory's informers share its one client: over HTTP/2 to the real
// kube-apiserver that is one connection and one transport thread for every
// resource's list and watch, and for the caller's writes.
TEST(InformerIntegrationTest, FactoryInformersShareOneConnectionAndThread) {
  const std::string ns = Cluster::Get().Namespace("factory");
  testing::TempDir dir;
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache);
  const int threads = testing::ThreadsNamed("kcache-http");
  RestConfig config = Cluster::Get().AdminConfig();
  config.disable_compression = true;
  auto factory = InformerFactory::Create(config, *cache, {.namespace_ = ns});
  auto client = factory->client();
  ASSERT_OK(client);
  // The client's transport has a socket pair of its own (libcurl's wakeup);
  // connections are counted from here.
  const int sockets = testing::SocketCount();
  for (const char* name : {"po", "cm", "deploy", "secrets", "svc"}) {
    ASSERT_OK(factory->ForResource(name)) << name;
  }
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(std::chrono::seconds(60)));
  // Each informer names its collection as discovery resolved it; a write
  // goes where the informer reads.
  EXPECT_EQ(factory->informers().at("deployments.apps")->Ref(), builtin::Deployments(ns));
  EXPECT_EQ(factory->informers().at("services")->Ref(), builtin::Services(ns));
  std::optional<ResourceRef> configmaps = factory->informers().at("configmaps")->Ref();
  ASSERT_TRUE(configmaps.has_value());
  ASSERT_OK((*client)->Create(configmaps->InNamespace(ns), ConfigMapJson("shared", "v")));
  ASSERT_TRUE(Eventually([&] {
    return factory->informers().at("configmaps")->GetLister().Namespace(ns).Get("shared").ok();
  }));
  EXPECT_EQ(testing::SocketCount() - sockets, 1) << "5 informers and a write";
  EXPECT_EQ(testing::ThreadsNamed("kcache-http") - threads, 1);
  EXPECT_EQ(factory->informers().size(), 5u);
}

// The factory checks the cluster's identity (on by default): a cache
// recorded from another cluster (the uid of kube-system differs) is listed
// from "" instead of resumed, and this cluster is recorded once synced, so
// the next start resumes. With the check off, the cache is resumed.
TEST(InformerIntegrationTest, FactoryListsACacheOfAnotherClusterAgainAndRecordsThisOne) {
  Api api(Cluster::Get().Namespace("identity"));
  for (int i = 0; i < 5; ++i) api.Create("cm-" + std::to_string(i));
  auto uid = KubeSystemUid(*api.client());
  ASSERT_OK(uid);
  ASSERT_FALSE(uid->empty());
  testing::TempDir dir;
  // One start of a factory over the cache: its configmaps informer's stats
  // once synced, and the identity the cache records then.
  auto start = [&](bool check, std::string* recorded) {
    auto cache = Cache::Open(dir.path());
    EXPECT_OK(cache);
    InformerFactoryOptions o;
    o.namespace_ = api.ns();
    o.check_cluster_identity = check;
    auto factory = InformerFactory::Create(Cluster::Get().AdminConfig(), *cache, o);
    auto informer = factory->ForResource("configmaps");
    EXPECT_OK(informer);
    EXPECT_OK(factory->Start());
    EXPECT_OK(factory->WaitForCacheSync(std::chrono::seconds(60)));
    ReflectorStats stats = (*informer)->stats();
    factory->Stop();
    auto info = (*cache)->GetClusterInfo();
    EXPECT_OK(info);
    *recorded = info.ok() && *info ? (*info)->uid : "";
    EXPECT_EQ(testing::CacheState(*(*informer)->GetIndexer()), api.State());
    return stats;
  };
  std::string recorded;
  ReflectorStats first = start(true, &recorded);
  EXPECT_EQ(first.lists, 1u);
  EXPECT_EQ(recorded, *uid) << "a new cache records the cluster it was synced from";

  {
    auto cache = Cache::Open(dir.path());
    ASSERT_OK(cache);
    ASSERT_OK((*cache)->SetClusterInfo({"https://elsewhere", "v1.20.2", "another-cluster"}));
  }
  api.Create("new");
  ReflectorStats other = start(true, &recorded);
  EXPECT_EQ(other.probes, 0u) << "not resumed";
  EXPECT_EQ(other.lists, 1u);
  EXPECT_EQ(recorded, *uid);

  ReflectorStats again = start(true, &recorded);
  EXPECT_EQ(again.probes, 1u) << "this cluster's cache resumes";
  EXPECT_EQ(again.lists, 0u);

  {
    auto cache = Cache::Open(dir.path());
    ASSERT_OK(cache);
    ASSERT_OK((*cache)->SetClusterInfo({"https://elsewhere", "v1.20.2", "another-cluster"}));
  }
  ReflectorStats unchecked = start(false, &recorded);
  EXPECT_EQ(unchecked.probes, 1u) << "unchecked: resumed";
  EXPECT_EQ(unchecked.lists, 0u);
  EXPECT_EQ(recorded, "another-cluster");
}

// Per-informer selectors against the real kube-apiserver: two informers of
// configmaps on one factory and cache, one selected by label, each in its
// own keyspace. Restarted with another selector, only the selected
// keyspace lists again (what is no longer selected is deleted); the plain
// one resumes, and the start after resumes both (invariant 3: resume without
// relist, and one relist where the stored selection is not the one asked).
TEST(InformerIntegrationTest, FactorySelectorsPerInformerAndASelectorChangeRelistsOneKeyspace) {
  Api api(Cluster::Get().Namespace("selectors"));
  api.Create("a-1");
  api.Create("a-2");
  api.Create("b-1");
  api.Update("b-1", "1", "b");
  testing::TempDir dir;
  struct Run {
    std::vector<std::string> mine;
    size_t all = 0;
    ReflectorStats mine_stats, all_stats;
  };
  auto start = [&](const std::string& track) {
    Run run;
    auto cache = Cache::Open(dir.path());
    EXPECT_OK(cache);
    auto factory = InformerFactory::Create(Cluster::Get().AdminConfig(), *cache,
                                           {.namespace_ = api.ns(), .informer = Options()});
    auto mine =
        factory->ForResource("configmaps", {.name = "mine", .label_selector = "track=" + track});
    EXPECT_OK(mine);
    auto all = factory->ForResource("configmaps");
    EXPECT_OK(all);
    EXPECT_OK(factory->Start());
    EXPECT_OK(factory->WaitForCacheSync(std::chrono::seconds(60)));
    factory->Stop();
    auto listed = (*mine)->GetLister().List(LabelSelector::Everything());
    EXPECT_OK(listed);
    for (const ObjectPtr& o : *listed) run.mine.push_back(o->name());
    std::sort(run.mine.begin(), run.mine.end());
    run.all = CacheState(*(*all)->GetIndexer()).size();
    run.mine_stats = (*mine)->stats();
    run.all_stats = (*all)->stats();
    return run;
  };
  Run first = start("a");
  EXPECT_EQ(first.mine, (std::vector<std::string>{"a-1", "a-2"}));
  EXPECT_EQ(first.all, 3u);

  Run changed = start("b");
  EXPECT_EQ(changed.mine, (std::vector<std::string>{"b-1"}));
  EXPECT_EQ(changed.mine_stats.lists, 1u) << "a new selector: listed again";
  EXPECT_EQ(changed.mine_stats.probes, 0u);
  EXPECT_EQ(changed.all_stats.lists, 0u) << "the other keyspace resumes";
  EXPECT_EQ(changed.all_stats.probes, 1u);
  EXPECT_EQ(changed.all, 3u);

  Run same = start("b");
  EXPECT_EQ(same.mine, (std::vector<std::string>{"b-1"}));
  EXPECT_EQ(same.mine_stats.lists, 0u) << "the new selector was recorded";
  // Both resume: one probe, made by whichever asked first, serves both
  // when they start together; a second when one starts only after the
  // other's probe was sent (a probe answers only those that began before it).
  EXPECT_GE(same.mine_stats.probes + same.all_stats.probes, 1u);
  EXPECT_LE(same.mine_stats.probes + same.all_stats.probes, 2u);
}

// A large LIST, paged, while another informer of the factory already
// watches on the same connection. With gzip responses multiplexed beside
// the watch, libcurl 7.88 stalled the list for good; a factory's views do
// not ask for compression (RestClient::WithParseOptions).
TEST(InformerIntegrationTest, FactorySyncsALargeCompressedListBesideAnOpenWatch) {
  const std::string ns = Cluster::Get().Namespace("gzip-beside-watch");
  const std::string pad(900, 'x');
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      auto client = Cluster::Get().Admin();
      for (int i = w; i < 20000; i += 8) {
        auto r = client->Create(
            ConfigMaps(ns), R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big-)" +
                                std::to_string(i) + R"("},"data":{"pad":")" + pad + R"("}})");
        if (!r.ok()) ++failed;
      }
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_EQ(failed, 0);
  testing::TempDir dir;
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache);
  auto factory = InformerFactory::Create(Cluster::Get().AdminConfig(), *cache);
  ASSERT_OK(factory->ForResource("namespaces"));
  ASSERT_OK(factory->ForResource("configmaps"));
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(std::chrono::seconds(50)));
  auto cms = factory->informers()
                 .at("configmaps")
                 ->GetLister()
                 .Namespace(ns)
                 .List(LabelSelector::Everything());
  ASSERT_OK(cms);
  EXPECT_EQ(cms->size(), 20000u);
}

// Create, update, relabel and delete while the informer runs: the cache and
// a handler's mirror both end equal to what the API returns.
// An informer of `api`'s config maps over keyspace "configmaps" of a new
// cache in `dir`, not started; null (and a failure) if the cache fails.
struct CacheInformer {
  std::shared_ptr<Indexer> ks;
  std::shared_ptr<SharedIndexInformer> informer;
};
CacheInformer NewCacheInformer(const Api& api, const std::string& dir) {
  auto cache = Cache::Open(dir);
  EXPECT_OK(cache) << cache.status();
  if (!cache.ok()) return {};
  auto ks = (*cache)->OpenKeyspace("configmaps");
  EXPECT_OK(ks) << ks.status();
  if (!ks.ok()) return {};
  return {*ks, SharedIndexInformer::Create(NewListWatch(api.client(), ConfigMaps(api.ns())), *ks,
                                           Options())};
}

TEST(InformerIntegrationTest, CacheAndHandlersFollowTheApi) {
  Api api(Cluster::Get().Namespace("follow"));
  for (int i = 0; i < 10; ++i) api.Create("before-" + std::to_string(i));
  testing::TempDir dir;
  CacheInformer c = NewCacheInformer(api, dir.path());
  ASSERT_TRUE(c.informer);
  const std::shared_ptr<Indexer>& ks = c.ks;
  const std::shared_ptr<SharedIndexInformer>& informer = c.informer;
  auto mirror = std::make_shared<Mirror>();
  ASSERT_OK(informer->AddEventHandler(mirror));
  ASSERT_OK(informer->Start());
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(60)));
  EXPECT_EQ(informer->stats().lists, 1u);
  for (int i = 0; i < 20; ++i) api.Create("cm-" + std::to_string(i));
  for (int i = 0; i < 5; ++i) api.Update("cm-" + std::to_string(i), "2");
  for (int i = 5; i < 10; ++i) api.Update("cm-" + std::to_string(i), "1", "b");  // relabel
  for (int i = 10; i < 15; ++i) api.Delete("cm-" + std::to_string(i));
  api.Delete("before-3");
  auto want = api.State();
  ASSERT_EQ(want.size(), 10u + 20u - 5u - 1u);
  EXPECT_TRUE(Eventually([&] { return CacheState(*ks) == want && mirror->state() == want; }))
      << ::testing::PrintToString(CacheState(*ks));
  EXPECT_EQ(informer->stats().lists, 1u);
  informer->Stop();
}

// Read-your-writes (invariant 5: versions compared as integers, which
// kube-apiserver promises): after a write, WaitForResourceVersion returns once the
// informer's store holds what was written (the lister shows it), a version
// the server has not reached yet is DeadlineExceeded, and GetStaleness
// counts how far behind a write the store is.
TEST(InformerIntegrationTest, ReadYourWritesWaitsForTheWrittenVersion) {
  Api api(Cluster::Get().Namespace("ryw"));
  api.Create("a");
  testing::TempDir dir;
  std::shared_ptr<SharedIndexInformer> informer = NewCacheInformer(api, dir.path()).informer;
  ASSERT_TRUE(informer);
  ASSERT_OK(informer->Start());
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(60)));
  const ResourceRef cms = ConfigMaps(api.ns());
  for (int i = 2; i < 12; ++i) {
    auto written = api.client()->Update(cms, ConfigMapJson("a", std::to_string(i)));
    ASSERT_OK(written) << written.status();
    const std::string rv = (*written)->resource_version();
    ASSERT_OK(informer->WaitForResourceVersion(rv, std::chrono::seconds(30)));
    // The write is visible through the lister at once after the wait.
    auto got = informer->GetLister().Namespace(api.ns()).Get("a");
    ASSERT_OK(got) << got.status();
    EXPECT_EQ(*(*got)->FieldValue("data.k"), std::to_string(i));
    EXPECT_EQ(informer->GetStaleness(rv).versions_behind, 0u);
    ASSERT_OK(informer->WaitForObjectVersion(api.ns() + "/a", rv, std::chrono::seconds(30)));
  }
  const uint64_t now = std::stoull(informer->LastSyncResourceVersion());
  const std::string ahead = std::to_string(now + 1000000);
  Status late = informer->WaitForResourceVersion(ahead, std::chrono::milliseconds(300));
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded) << late;
  // The store goes on meanwhile (bookmarks carry the server's newest
  // version, which other writes move): behind by the million, less what it
  // has applied since, and exactly by what the two versions say.
  const std::string store_rv_before = informer->LastSyncResourceVersion();
  Staleness behind = informer->GetStaleness(ahead);
  ASSERT_TRUE(behind.versions_behind.has_value());
  EXPECT_GT(*behind.versions_behind, 900000u);
  EXPECT_LE(*behind.versions_behind, 1000000u);
  EXPECT_EQ(*behind.versions_behind, now + 1000000 - std::stoull(behind.store_resource_version));
  EXPECT_GE(std::stoull(behind.store_resource_version), std::stoull(store_rv_before));
  EXPECT_TRUE(informer->WaitForResourceVersion("x", std::chrono::seconds(1)).IsInvalidArgument());
  informer->Stop();
  EXPECT_EQ(informer->WaitForResourceVersion(ahead, std::chrono::seconds(1)).code(),
            StatusCode::kFailedPrecondition);
}

// Invariant 3: a checkpoint older than etcd's history (configmaps bypass
// the watch cache here, so compaction expires it) leads to one relist; a
// changes-only handler sees exactly the changes made while down.
TEST(InformerIntegrationTest, ExpiredCheckpointRelistsOnceAndReportsTheChanges) {
  Api api(Cluster::Get().Namespace("expired"));
  for (int i = 0; i < 30; ++i) api.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  {
    auto cache = Cache::Open(dir.path());
    ASSERT_OK(cache);
    auto ks = (*cache)->OpenKeyspace("configmaps");
    ASSERT_OK(ks);
    auto informer = SharedIndexInformer::Create(NewListWatch(api.client(), ConfigMaps(api.ns())),
                                                *ks, Options());
    ASSERT_OK(informer->Start());
    ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(60)));
    informer->Stop();
  }
  api.Create("new");
  api.Update("cm-1", "2");
  api.Delete("cm-2");
  Cluster::Get().CompactEtcd();

  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache);
  auto ks = (*cache)->OpenKeyspace("configmaps");
  ASSERT_OK(ks);
  auto informer =
      SharedIndexInformer::Create(NewListWatch(api.client(), ConfigMaps(api.ns())), *ks, Options());
  auto changes = std::make_shared<testing::RecordingHandler>(false);
  auto reg =
      informer->AddEventHandler(changes, {std::chrono::milliseconds(0), StartMode::kChangesOnly});
  ASSERT_OK(reg);
  ASSERT_OK(informer->Start());
  ASSERT_TRUE(Eventually(
      [&] { return informer->stats().lists == 1 && (*reg)->HasSynced() && changes->size() >= 3; }));
  EXPECT_THAT(changes->calls(), ::testing::UnorderedElementsAre("add new", "update cm-1 1>2",
                                                                "delete cm-2 tombstone"));
  EXPECT_EQ(CacheState(**ks), api.State());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(informer->stats().lists, 1u);
  informer->Stop();
}

// Runs `after_first_page` once, after the first page of a paginated LIST
// has been answered; otherwise passes every call through.
class HookedListWatch final : public ListerWatcher {
 public:
  HookedListWatch(std::shared_ptr<ListerWatcher> inner, std::function<void()> after_first_page)
      : inner_(std::move(inner)), hook_(std::move(after_first_page)) {}
  StatusOr<ObjectList> List(const ListOptions& o) override {
    auto r = inner_->List(o);
    if (r.ok() && o.continue_token.empty() && !r->continue_token.empty() && hook_) {
      std::exchange(hook_, nullptr)();
    }
    return r;
  }
  StatusOr<std::unique_ptr<WatchStream>> Watch(const ListOptions& o) override {
    return inner_->Watch(o);
  }
  std::string Describe() const override { return inner_->Describe(); }

 private:
  std::shared_ptr<ListerWatcher> inner_;
  std::function<void()> hook_;
};

// 410 on a continuation page (etcd compacted between pages): as client-go's
// pager, one unpaginated LIST at the requested resourceVersion follows, and
// what the first page wrote is dropped with its session, so an object
// deleted between the pages is not left in the cache.
TEST(InformerIntegrationTest, ExpiredContinueTokenRelistsInOneRequest) {
  Api api(Cluster::Get().Namespace("continue"));
  for (int i = 0; i < 30; ++i) api.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  auto cache = Cache::Open(dir.path());
  ASSERT_OK(cache);
  auto ks = (*cache)->OpenKeyspace("configmaps");
  ASSERT_OK(ks);
  auto lw =
      std::make_shared<HookedListWatch>(NewListWatch(api.client(), ConfigMaps(api.ns())), [&] {
        api.Delete("cm-0");  // on the first page
        Cluster::Get().CompactEtcd();
      });
  InformerOptions o = Options();
  o.reflector.streaming_list = false;
  o.reflector.page_size = 10;
  auto informer = SharedIndexInformer::Create(lw, *ks, o);
  ASSERT_OK(informer->Start());
  ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(60)));
  ReflectorStats stats = informer->stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.list_requests, 3u) << "page 1, the expired page 2, one full LIST";
  EXPECT_EQ((*ks)->GetByKey(api.ns() + "/cm-0").value(), nullptr);
  EXPECT_EQ(CacheState(**ks), api.State());
  EXPECT_EQ(CacheState(**ks).size(), 29u);
  informer->Stop();
}

// Kills its process when the `kill_at`th LIST request is asked for; passes
// every call through until then.
class KillingListWatch final : public ListerWatcher {
 public:
  KillingListWatch(std::shared_ptr<ListerWatcher> inner, int kill_at)
      : inner_(std::move(inner)), kill_at_(kill_at) {}
  StatusOr<ObjectList> List(const ListOptions& o) override {
    if (++lists_ == kill_at_) raise(SIGKILL);
    return inner_->List(o);
  }
  StatusOr<std::unique_ptr<WatchStream>> Watch(const ListOptions& o) override {
    return inner_->Watch(o);
  }
  std::string Describe() const override { return inner_->Describe(); }

 private:
  std::shared_ptr<ListerWatcher> inner_;
  const int kill_at_;
  std::atomic<int> lists_{0};
};

constexpr int kContinuePageSize = 20;
constexpr char kKilledListDir[] = "KCACHE_KILLED_LIST_DIR";
constexpr char kKilledListNs[] = "KCACHE_KILLED_LIST_NS";

// An informer over the namespace's configmaps, into the cache at `dir`,
// with pages of 20 and the default options otherwise (a streaming list
// first, which v1.20 does not offer).
// Its reflector's events go to stderr.
std::shared_ptr<SharedIndexInformer> PagedInformer(const std::string& ns,
                                                   std::shared_ptr<Indexer> store,
                                                   int kill_at = 0) {
  std::shared_ptr<ListerWatcher> lw = NewListWatch(Cluster::Get().Admin(), ConfigMaps(ns));
  if (kill_at > 0) lw = std::make_shared<KillingListWatch>(std::move(lw), kill_at);
  InformerOptions o = Options();
  o.reflector.page_size = kContinuePageSize;
  o.reflector.on_event = [](const ReflectorEvent& e) {
    std::fprintf(stderr, "%s\n", e.message.c_str());
  };
  return SharedIndexInformer::Create(std::move(lw), std::move(store), o);
}

// The child of the test below: lists until it is killed, on the sixth LIST
// request (five pages committed).
[[noreturn]] void ListUntilKilled(const std::string& dir, const std::string& ns) {
  auto cache = Cache::Open(dir);
  if (!cache.ok()) _exit(3);
  auto ks = (*cache)->OpenKeyspace("configmaps");
  if (!ks.ok()) _exit(3);
  auto informer = PagedInformer(ns, *ks, 6);
  if (!informer->Start().ok()) _exit(3);
  informer->WaitForSync(std::chrono::seconds(60));
  _exit(4);  // not killed
}

// Runs ListUntilKilled in a fresh image of this binary, its stderr to
// `log`, and waits for its SIGKILL.
void KillMidList(const std::string& dir, const std::string& ns, const std::string& log) {
  pid_t child = fork();
  if (child == 0) {
    setenv(kKilledListDir, dir.c_str(), 1);
    setenv(kKilledListNs, ns.c_str(), 1);
    const int quiet = open("/dev/null", O_WRONLY);
    if (quiet >= 0) dup2(quiet, STDOUT_FILENO);
    const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err >= 0) dup2(err, STDERR_FILENO);
    execl("/proc/self/exe", "/proc/self/exe",
          "--gtest_filter=InformerIntegrationTest.AFirstListKilledMidwayContinuesOrStartsOver",
          static_cast<char*>(nullptr));
    _exit(3);
  }
  ASSERT_GT(child, 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  std::ifstream in(log);
  std::stringstream said;
  said << in.rdbuf();
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
      << "the child exited with " << WEXITSTATUS(wstatus) << "; it said:\n"
      << said.str();
}

// Invariant 3 with the progress kept, against the real kube-apiserver: a
// first sync killed in its sixth page has committed five, each with the
// apiserver's continue token. Restarted while the token holds, it asks
// only for the pages it lacks (counted by the apiserver's /metrics), and
// the watch from the list's resourceVersion brings what changed since.
// Restarted after etcd compacted past the list (the token is refused with
// 410), it lists from the start and writes only what the first attempt
// had not stored or what changed: the 100 objects it lacked and one update.
TEST(InformerIntegrationTest, AFirstListKilledMidwayContinuesOrStartsOver) {
  if (const char* dir = std::getenv(kKilledListDir))
    ListUntilKilled(dir, std::getenv(kKilledListNs));
  for (bool expire : {false, true}) {
    SCOPED_TRACE(expire ? "the token expired" : "the token holds");
    Api api(Cluster::Get().Namespace(expire ? "killed-list-expired" : "killed-list"));
    for (int i = 0; i < 200; ++i) api.Create("cm-" + std::to_string(1000 + i));
    testing::TempDir dir;
    const std::string cache_dir = dir.Sub("cache");
    ASSERT_NO_FATAL_FAILURE(KillMidList(cache_dir, api.ns(), dir.Sub("child.log")));
    auto cache = Cache::Open(cache_dir);
    ASSERT_OK(cache) << cache.status();
    ASSERT_OK((*cache)->Verify());
    auto ks = (*cache)->OpenKeyspace("configmaps");
    ASSERT_OK(ks);
    EXPECT_EQ((*ks)->LastSyncResourceVersion(), "") << "invariant 3";
    EXPECT_EQ(*(*ks)->Size(), 5u * kContinuePageSize);
    auto cut = (*ks)->GetCutShortRelist();
    ASSERT_OK(cut);
    ASSERT_TRUE(cut->has_value());
    EXPECT_THAT((*cut)->progress, ::testing::HasSubstr("\"continue\""));
    // Changes while the process is down: one listed object updated, one
    // deleted, one not listed yet deleted, one created.
    api.Update("cm-1001", "changed");
    api.Delete("cm-1002");
    api.Delete("cm-1150");
    api.Create("cm-2000");
    if (expire) Cluster::Get().CompactEtcd();
    const double lists = api.ListMetric("apiserver_request_total");
    std::vector<std::string> said;
    std::mutex mu;
    std::shared_ptr<SharedIndexInformer> informer;
    {
      std::shared_ptr<ListerWatcher> lw = NewListWatch(api.client(), ConfigMaps(api.ns()));
      InformerOptions o = Options();
      o.reflector.page_size = kContinuePageSize;
      o.reflector.on_event = [&](const ReflectorEvent& e) {
        std::lock_guard l(mu);
        said.push_back(e.message);
      };
      informer = SharedIndexInformer::Create(std::move(lw), *ks, o);
    }
    ASSERT_OK(informer->Start());
    ASSERT_TRUE(informer->WaitForSync(std::chrono::seconds(60)));
    ReflectorStats stats = informer->stats();
    EXPECT_EQ(stats.lists, 1u);
    if (expire) {
      EXPECT_EQ(stats.continued_lists, 0u);
      EXPECT_EQ(stats.list_requests, 1u + 10u) << "the refused page, then ten pages";
      EXPECT_EQ(stats.listed_objects, 199u);
    } else {
      EXPECT_EQ(stats.continued_lists, 1u);
      EXPECT_EQ(stats.list_requests, 5u) << "the five pages it lacked";
      EXPECT_EQ(stats.listed_objects, 100u) << "the list's own state, as of its first page";
    }
    EXPECT_EQ(api.ListMetric("apiserver_request_total") - lists, stats.list_requests);
    bool converged = Eventually([&] { return CacheState(**ks) == api.State(); });
    EXPECT_TRUE(converged);
    EXPECT_EQ(CacheState(**ks).size(), 199u);
    std::lock_guard l(mu);
    std::string log;
    for (const std::string& m : said) log += m + "\n";
    if (expire) {
      EXPECT_THAT(log, ::testing::HasSubstr("the server would not continue the LIST cut short"));
      EXPECT_THAT(log, ::testing::HasSubstr("(101 written, 98 unchanged)")) << log;
    } else {
      EXPECT_THAT(log, ::testing::HasSubstr("continuing the LIST cut short at resourceVersion"));
      EXPECT_THAT(log, ::testing::HasSubstr("LIST (continued after 100 objects) of 100 objects"))
          << log;
    }
    informer->Stop();
  }
}

// Invariants 1 and 3: SIGKILL the syncing process at random points while
// the namespace changes; every restart resumes without a full LIST (the
// apiserver counts one small limit=1 probe per restart), the reopened cache
// passes Verify, and the cache converges to what the API returns.
TEST(InformerIntegrationTest, SigkillAndRestartResumeWithoutList) {
  Api api(Cluster::Get().Namespace("sigkill"));
  for (int i = 0; i < 50; ++i) api.Create("cm-" + std::to_string(i));
  testing::TempDir dir;
  const std::string cache_dir = dir.Sub("cache");
  {
    SyncProcess first(api.ns(), cache_dir, dir.Sub("sync-0.log"));
    ASSERT_TRUE(first.WaitSynced()) << first.Log();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    first.Kill(SIGKILL);
  }
  std::mt19937 rng(12345);
  std::atomic<bool> changing{true};
  std::atomic<int> changes{0};
  std::thread writer([&] {
    auto client = Cluster::Get().Admin();
    int i = 0;
    while (changing) {
      std::string name = "cm-" + std::to_string(i % 50);
      auto r = client->Do("PUT", "/api/v1/namespaces/" + api.ns() + "/configmaps/" + name,
                          ConfigMapJson(name, std::to_string(i)));
      if (r.ok()) ++changes;
      if (i % 7 == 0) {
        std::string extra = "extra-" + std::to_string(i);
        (void)client->Do("POST", "/api/v1/namespaces/" + api.ns() + "/configmaps",
                         ConfigMapJson(extra, "x"));
        if (i % 14 == 0)
          (void)client->Do("DELETE", "/api/v1/namespaces/" + api.ns() + "/configmaps/" + extra);
      }
      ++i;
    }
  });
  for (int round = 1; round <= 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    {  // Invariant 1: what the killed process left is consistent.
      auto cache = Cache::Open(cache_dir);
      ASSERT_OK(cache) << cache.status();
      auto ks = (*cache)->OpenKeyspace("configmaps");
      ASSERT_OK(ks);
      EXPECT_NE((*ks)->LastSyncResourceVersion(), "");
      EXPECT_OK((*cache)->Verify());
    }
    double lists = api.ListMetric("apiserver_request_total");
    double bytes = api.ListMetric("apiserver_response_sizes_sum");
    SyncProcess sync(api.ns(), cache_dir, dir.Sub("sync-" + std::to_string(round) + ".log"));
    ASSERT_TRUE(sync.WaitSynced()) << sync.Log();
    EXPECT_THAT(sync.Log(), ::testing::HasSubstr("(no LIST)"));
    EXPECT_THAT(sync.Log(), ::testing::Not(::testing::HasSubstr("LIST of")));
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 800)(rng)));
    sync.Kill(SIGKILL);
    EXPECT_EQ(api.ListMetric("apiserver_request_total") - lists, 1) << "only the limit=1 probe";
    EXPECT_LT(api.ListMetric("apiserver_response_sizes_sum") - bytes, 4096)
        << "a probe, not a list";
  }
  changing = false;
  writer.join();
  EXPECT_GT(changes, 20);
  // One last start converges to the API's state.
  SyncProcess sync(api.ns(), cache_dir, dir.Sub("sync-last.log"));
  ASSERT_TRUE(sync.WaitSynced()) << sync.Log();
  auto want = api.State();
  bool converged = Eventually([&] {
    auto cache = Cache::OpenReadOnly(cache_dir);
    if (!cache.ok()) return false;
    auto ks = (*cache)->OpenKeyspace("configmaps");
    return ks.ok() && CacheState(**ks) == want;
  });
  EXPECT_TRUE(converged);
  sync.Kill(SIGTERM);
}

}  // namespace
}  // namespace kcache
