// SPDX-License-Identifier: Apache-2.0

// InformerFactory against kcache serve: resources by kubectl's names, one
// client for every informer, listers from informers, WaitForCacheSync that
// names the laggards, and Stop() as the end of every handler call.
#include "kcache/informer_factory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "persist/db.h"
#include "testing/eventually.h"
#include "testing/process_stats.h"
#include "testing/recording_handler.h"
#include "testing/serve_fixture.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::RecordingHandler;
using testing::ServeFixture;
using testing::StatusIs;

struct Fixture {
  Fixture() : serve(testing::QuietCluster(20)) {
    auto c = Cache::Open(dir.path());
    EXPECT_OK(c);
    cache = *c;
  }
  std::unique_ptr<InformerFactory> NewFactory() {
    RestConfig config;
    config.server = serve.server->url();
    return InformerFactory::Create(config, cache);
  }
  ServeFixture serve;
  testing::TempDir dir;
  std::shared_ptr<Cache> cache;
};

TEST(InformerFactoryTest, ResourcesByKubectlNamesShareOneInformer) {
  Fixture f;
  auto factory = f.NewFactory();
  auto pods = factory->ForResource("pods");
  ASSERT_OK(pods);
  auto po = factory->ForResource("po");
  ASSERT_OK(po);
  EXPECT_EQ(*pods, *po) << "one informer per resource, whatever its name";
  ASSERT_OK(factory->ForResource("Pod"));
  ASSERT_OK(factory->ForResource("cm"));
  ASSERT_OK(factory->ForResource("widgets.demo.kcache.io"));
  ASSERT_OK(factory->ForResource("wd"));
  EXPECT_THAT(factory->ForResource("gizmos").status(),
              StatusIs(StatusCode::kNotFound, HasSubstr("gizmos")));
  std::vector<std::string> names;
  for (const auto& [name, informer] : factory->informers()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"configmaps", "pods", "widgets.demo.kcache.io"}));
}

TEST(InformerFactoryTest, ListersComeFromInformers) {
  Fixture f;
  auto factory = f.NewFactory();
  auto pods = factory->ForResource("po");
  ASSERT_OK(pods);
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(20s));
  Lister lister = (*pods)->GetLister();
  auto all = lister.List(LabelSelector::Everything());
  ASSERT_OK(all);
  EXPECT_EQ(all->size(), 20u);
  auto one = lister.Namespace((*all)[0]->namespace_()).Get((*all)[0]->name());
  ASSERT_OK(one);
  EXPECT_EQ((*one)->name(), (*all)[0]->name());
  EXPECT_THAT(lister.Namespace("default").Get("missing").status(),
              StatusIs(StatusCode::kNotFound, HasSubstr(R"(pods "missing" not found)")));
}

TEST(InformerFactoryTest, EveryInformerUsesTheFactorysOneClientAndTransportThread) {
  Fixture f;
  const int before = testing::ThreadsNamed("kcache-http");
  auto factory = f.NewFactory();
  for (const char* name : {"pods", "configmaps", "namespaces", "nodes", "widgets"}) {
    ASSERT_OK(factory->ForResource(name));
  }
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(20s));
  EXPECT_EQ(testing::ThreadsNamed("kcache-http") - before, 1)
      << "five informers, one transport thread";
  // The caller's writes can use the same client.
  auto client = factory->client();
  ASSERT_OK(client);
  ASSERT_OK((*client)->Create(ServeFixture::ConfigMaps("default"),
                              ServeFixture::ConfigMapJson("from-the-factory", "v")));
  EXPECT_EQ(testing::ThreadsNamed("kcache-http") - before, 1);
  EXPECT_GT(factory->BytesReceived(), 0u);
}

TEST(InformerFactoryTest, WaitForCacheSyncNamesTheInformersNotSynced) {
  Fixture f;
  auto factory = f.NewFactory();
  ASSERT_OK(factory->ForResource("pods"));
  // A resource the server does not have: its informer never syncs.
  ApiResource gizmos{"", "v1", "gizmos", "Gizmo", "gizmo", true, {}, {"list", "watch"}};
  ASSERT_OK(factory->ForResource(gizmos));
  ASSERT_OK(factory->Start());
  EXPECT_THAT(
      factory->WaitForCacheSync(300ms),
      StatusIs(StatusCode::kDeadlineExceeded, HasSubstr("not synced after 300 ms: gizmos")));
  EXPECT_TRUE(factory->informers().at("pods")->HasSynced());
  factory->Stop();
  EXPECT_EQ(factory->WaitForCacheSync(300ms).code(), StatusCode::kCancelled);
}

TEST(InformerFactoryTest, NoHandlerRunsAfterStopAndNothingStartsAgain) {
  Fixture f;
  auto factory = f.NewFactory();
  auto cms = factory->ForResource("configmaps");
  ASSERT_OK(cms);
  auto handler = std::make_shared<RecordingHandler>();
  ASSERT_OK((*cms)->AddEventHandler(handler));
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(20s));
  f.serve.Create("before");
  ASSERT_TRUE(Eventually([&] { return handler->size() == 1; }));
  factory->Stop();
  factory->Stop();  // idempotent
  const size_t calls = handler->size();
  f.serve.Create("after");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(handler->size(), calls) << "a handler ran after Stop() returned";
  EXPECT_EQ(factory->ForResource("pods").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(factory->Start().code(), StatusCode::kFailedPrecondition);
}

// Destruction order is free: informers and listers outlive the factory,
// stopped, with their objects still readable.
TEST(InformerFactoryTest, InformersOutliveTheirFactoryStopped) {
  Fixture f;
  auto factory = f.NewFactory();
  auto pods = factory->ForResource("pods");
  ASSERT_OK(pods);
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(20s));
  std::shared_ptr<SharedIndexInformer> informer = *pods;
  factory.reset();
  EXPECT_TRUE(informer->IsStopped());
  auto all = informer->GetLister().List(LabelSelector::Everything());
  ASSERT_OK(all);
  EXPECT_EQ(all->size(), 20u);
}

TEST(InformerFactoryTest, AClientThatCannotBeMadeIsAnErrorOfForResource) {
  Fixture f;
  RestConfig config;
  config.server = "https://127.0.0.1:1";
  config.ca_file = f.dir.Sub("missing-ca.crt");
  auto factory = InformerFactory::Create(config, f.cache);
  auto got = factory->ForResource("pods");
  EXPECT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("missing-ca.crt"));
}

// Creates configmap `name` labelled role=`role` in namespace default.
void CreateWithRole(ServeFixture& serve, const std::string& name, const std::string& role) {
  auto r =
      serve.client->Do("POST", "/api/v1/namespaces/default/configmaps",
                       ServeFixture::ConfigMapJson(name, "v", R"({"role":")" + role + R"("})"));
  ASSERT_OK(r) << r.status();
}

std::vector<std::string> Names(SharedIndexInformer& informer) {
  std::vector<std::string> out;
  auto all = informer.GetLister().List(LabelSelector::Everything());
  EXPECT_OK(all);
  if (all.ok()) {
    for (const ObjectPtr& o : *all) out.push_back(o->name());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Two informers of one resource with different selectors share the factory
// and the cache, each in a keyspace of its own that records its selection.
TEST(InformerFactoryTest, PerInformerSelectorsEachHaveAKeyspaceOfTheirOwn) {
  Fixture f;
  CreateWithRole(f.serve, "src-1", "source");
  CreateWithRole(f.serve, "src-2", "source");
  CreateWithRole(f.serve, "out-1", "derived");
  auto factory = f.NewFactory();
  auto sources =
      factory->ForResource("configmaps", {.name = "sources", .label_selector = "role=source"});
  ASSERT_OK(sources);
  auto derived = factory->ForResource("cm", {.name = "derived", .label_selector = "role=derived"});
  ASSERT_OK(derived);
  auto pods = factory->ForResource("pods");
  ASSERT_OK(pods);
  ASSERT_OK(factory->Start());
  ASSERT_OK(factory->WaitForCacheSync(20s));
  EXPECT_EQ(Names(**sources), (std::vector<std::string>{"src-1", "src-2"}));
  EXPECT_EQ(Names(**derived), (std::vector<std::string>{"out-1"}));
  std::vector<std::string> names;
  for (const auto& [name, informer] : factory->informers()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"configmaps#derived", "configmaps#sources", "pods"}));

  // The same options give the same informer; other ones under its name are
  // refused, naming both selections; a plain ForResource takes what is there.
  auto again =
      factory->ForResource("configmaps", {.name = "sources", .label_selector = "role=source"});
  ASSERT_OK(again);
  EXPECT_EQ(*again, *sources);
  EXPECT_THAT(
      factory->ForResource("configmaps", {.name = "sources", .label_selector = "role=x"}).status(),
      StatusIs(StatusCode::kInvalidArgument,
               HasSubstr("configmaps#sources exists with all namespaces, -l role=source, "
                         "not all namespaces, -l role=x")));
  EXPECT_THAT(factory->ForResource("pods", {.label_selector = "app=a"}).status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("pods exists with")));
  auto plain = factory->ForResource("pods");
  ASSERT_OK(plain);
  EXPECT_EQ(*plain, *pods);
  EXPECT_THAT(factory->ForResource("configmaps", {.name = "a/b"}).status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(R"(informer name "a/b")")));

  // Changes reach the informer whose selector they match.
  CreateWithRole(f.serve, "src-3", "source");
  ASSERT_TRUE(Eventually([&] { return Names(**sources).size() == 3; }));
  EXPECT_EQ(Names(**derived), (std::vector<std::string>{"out-1"}));
  factory->Stop();

  auto stats = f.cache->Stats("configmaps#sources");
  ASSERT_OK(stats);
  ASSERT_TRUE(stats->resource.has_value());
  EXPECT_EQ(stats->resource->resource, "configmaps");
  ASSERT_TRUE(stats->resource->selection.has_value());
  EXPECT_EQ(*stats->resource->selection, (ResourceSelection{"", "role=source", ""}));
}

// A selector that changed between two starts lists that keyspace again
// (objects no longer selected are deleted, with handler calls); the other
// keyspaces resume without a LIST, and so does the next start. Invariant 3:
// resume without relist where the store holds what the server would list,
// one relist diffed against the store where it does not.
// A restart over the same cache rewrites no resource record: at a thousand
// types, each rewrite is a commit before the first watch opens.
TEST(InformerFactoryTest, AnInformerMadeAgainOverItsCacheWritesNothing) {
  Fixture f;
  {
    auto factory = f.NewFactory();
    ASSERT_OK(factory->ForResource("pods"));
    ASSERT_OK(factory->ForResource("configmaps"));
  }
  auto pods = f.cache->GetResourceInfo("pods");
  ASSERT_OK(pods);
  ASSERT_TRUE(pods->has_value()) << "the first factory records the resource";
  const uint64_t before = storage::DbOf(*f.cache)->db->GetLatestSequenceNumber();
  {
    auto factory = f.NewFactory();
    ASSERT_OK(factory->ForResource("pods"));
    ASSERT_OK(factory->ForResource("configmaps"));
  }
  EXPECT_EQ(storage::DbOf(*f.cache)->db->GetLatestSequenceNumber(), before);
  EXPECT_EQ(*f.cache->GetResourceInfo("pods"), *pods);
}

TEST(InformerFactoryTest, ASelectorChangeRelistsOnlyItsKeyspaceOnRestart) {
  Fixture f;
  CreateWithRole(f.serve, "src-1", "source");
  CreateWithRole(f.serve, "src-2", "source");
  CreateWithRole(f.serve, "out-1", "derived");
  struct Run {
    std::vector<std::string> names;
    ReflectorStats selected, pods;
    int deletes = 0;
    std::vector<std::string> events;
  };
  auto start = [&](const std::string& role) {
    Run run;
    std::mutex events_mu;  // every informer's reflector thread reports here
    InformerFactoryOptions o;
    o.informer.reflector.on_event = [&run, &events_mu](const ReflectorEvent& e) {
      std::lock_guard l(events_mu);
      run.events.push_back(e.message);
    };
    RestConfig config;
    config.server = f.serve.server->url();
    auto factory = InformerFactory::Create(config, f.cache, o);
    auto selected =
        factory->ForResource("configmaps", {.name = "mine", .label_selector = "role=" + role});
    EXPECT_OK(selected);
    auto pods = factory->ForResource("pods");
    EXPECT_OK(pods);
    auto handler = std::make_shared<RecordingHandler>();
    auto registration = (*selected)->AddEventHandler(handler);
    EXPECT_OK(registration);
    EXPECT_OK(factory->Start());
    EXPECT_OK(factory->WaitForCacheSync(20s));
    // Stop drops notifications not yet delivered: the handler is done with
    // the relist's once its registration has synced.
    EXPECT_TRUE(testing::Eventually([&] { return (*registration)->HasSynced(); }));
    factory->Stop();
    run.names = Names(**selected);
    run.selected = (*selected)->stats();
    run.pods = (*pods)->stats();
    for (const auto& call : handler->calls()) run.deletes += call.rfind("delete", 0) == 0;
    return run;
  };
  Run first = start("source");
  EXPECT_EQ(first.names, (std::vector<std::string>{"src-1", "src-2"}));
  EXPECT_EQ(first.selected.lists, 1u);

  Run changed = start("derived");
  EXPECT_EQ(changed.names, (std::vector<std::string>{"out-1"}));
  EXPECT_EQ(changed.selected.lists, 1u) << "listed again, not resumed";
  EXPECT_EQ(changed.selected.probes, 0u);
  EXPECT_EQ(changed.deletes, 2) << "src-1 and src-2 are no longer selected";
  EXPECT_EQ(changed.pods.lists, 0u) << "another keyspace resumes";
  EXPECT_EQ(changed.pods.probes, 1u);
  bool said = false;
  for (const std::string& m : changed.events)
    said |= m.find(
                "listed with all namespaces, -l role=source before, now all namespaces, "
                "-l role=derived") != std::string::npos;
  EXPECT_TRUE(said) << "the list says why it was not a resume";

  Run same = start("derived");
  EXPECT_EQ(same.names, (std::vector<std::string>{"out-1"}));
  EXPECT_EQ(same.selected.lists, 0u) << "the new selection was recorded: resumed";
  // Both resume: one probe, made by whichever asked first, serves both
  // when they start together; a second when one starts only after the
  // other's probe was sent (a probe answers only those that began before it).
  EXPECT_GE(same.selected.probes + same.pods.probes, 1u);
  EXPECT_LE(same.selected.probes + same.pods.probes, 2u);
}

}  // namespace
}  // namespace kcache
