// InformerFactory against kcache serve: resources by kubectl's names, one
// client for every informer, listers from informers, WaitForCacheSync that
// names the laggards, and Stop() as the end of every handler call.
#include "kcache/informer_factory.h"

#include <gtest/gtest.h>

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
  ApiResource gizmos{{"", "v1", "gizmos"}, "Gizmo", "gizmo", true, {}, {"list", "watch"}};
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

}  // namespace
}  // namespace kcache
