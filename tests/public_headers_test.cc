// SPDX-License-Identifier: Apache-2.0

// Every public header compiles on its own and reaches no private header:
// the include path of this test holds include/ only (see tests/meson.build).

#include "kcache/api_resource.h"
#include "kcache/cache.h"
#include "kcache/client_flags.h"
#include "kcache/clock.h"
#include "kcache/delta_fifo.h"
#include "kcache/discovery.h"
#include "kcache/encryption.h"
#include "kcache/event_recorder.h"
#include "kcache/exit_on_error.h"
#include "kcache/field_selector.h"
#include "kcache/fleet.h"
#include "kcache/histogram.h"
#include "kcache/indexer.h"
#include "kcache/informer.h"
#include "kcache/informer_factory.h"
#include "kcache/journal.h"
#include "kcache/key.h"
#include "kcache/label_selector.h"
#include "kcache/labels.h"
#include "kcache/leader_election.h"
#include "kcache/list.h"
#include "kcache/lister.h"
#include "kcache/object.h"
#include "kcache/object_builder.h"
#include "kcache/owner.h"
#include "kcache/pager.h"
#include "kcache/rate_limiter.h"
#include "kcache/reflector.h"
#include "kcache/resource.h"
#include "kcache/rest_client.h"
#include "kcache/rest_config.h"
#include "kcache/signals.h"
#include "kcache/snapshot.h"
#include "kcache/status.h"
#include "kcache/status_or.h"
#include "kcache/store.h"
#include "kcache/version.h"
#include "kcache/watch.h"
#include "kcache/workqueue.h"
#include "kcache/write_options.h"

#include <gtest/gtest.h>

#if __has_include("core/json_error.h") || __has_include("core/store_errors.h")
#error "a private header is reachable from the public include path"
#endif

namespace {

TEST(PublicHeadersTest, UsableWithoutPrivateHeaders) {
  auto store = kcache::NewMemoryIndexer();
  auto obj = kcache::Object::Parse(R"({"metadata":{"name":"a","namespace":"b"}})");
  ASSERT_TRUE(obj.ok()) << obj.status();
  kcache::Status added = store->Add(*obj);
  ASSERT_TRUE(added.ok()) << added;
  kcache::Lister lister(std::move(store), {"", "pods"});
  EXPECT_EQ((*lister.Namespace("b").Get("a"))->name(), "a");
}

TEST(PublicHeadersTest, RestClientWithoutPrivateHeaders) {
  kcache::RestConfig config;
  config.server = "http://127.0.0.1:1";
  auto client = kcache::RestClient::Create(config);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(kcache::EncodeListOptions({.limit = 5}, /*watch=*/false), "limit=5");
}

}  // namespace
