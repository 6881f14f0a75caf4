// SPDX-License-Identifier: Apache-2.0

// The C API (kcache/c.h), called as a C program calls it, against caches
// and snapshots that kcache sync and kcache serve make: reads with
// selectors, streamed; informers with handlers that resume from the cache
// with no LIST; writes with a conflict told apart; snapshots; errors.

#include "kcache/c.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "testing/command.h"
#include "testing/temp_dir.h"

namespace {

using kcache::testing::CommandResult;
using kcache::testing::KcacheBin;
using kcache::testing::RunCommand;

// A message given by the API, freed.
std::string Take(char* s) {
  std::string out = s ? s : "";
  kcache_free(s);
  return out;
}

// A failing call's code, with its message.
#define EXPECT_KC_OK(call)                                          \
  do {                                                              \
    char* kc_err = nullptr;                                         \
    kcache_code kc_code = (call);                                   \
    EXPECT_EQ(kc_code, KCACHE_OK) << #call << ": " << Take(kc_err); \
  } while (0)

// Every object `it` yields, by key; destroys it.
std::map<std::string, nlohmann::json> Drain(kcache_iterator* it) {
  std::map<std::string, nlohmann::json> out;
  while (kcache_iterator_next(it)) {
    size_t key_len = 0, len = 0;
    const char* key = kcache_iterator_key(it, &key_len);
    const char* json = kcache_iterator_object(it, &len);
    out[std::string(key, key_len)] = nlohmann::json::parse(std::string(json, len));
  }
  char* err = nullptr;
  EXPECT_EQ(kcache_iterator_status(it, &err), KCACHE_OK) << Take(err);
  kcache_iterator_destroy(it);
  return out;
}

// Whether `done` holds within 10 s.
template <typename Fn>
bool Eventually(Fn done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// The value of kcache serve's /metrics line with `labels`.
double Metric(const std::string& url, const std::string& name, const std::string& labels) {
  CommandResult r = RunCommand("curl -s " + url + "/metrics");
  std::smatch m;
  std::regex re(name + "\\{" + labels + "\\} ([0-9.]+)");
  return std::regex_search(r.output, m, re) ? std::stod(m[1]) : 0;
}

TEST(CApiTest, VersionsAndCodeNames) {
  EXPECT_EQ(kcache_c_version(), KCACHE_C_VERSION_MAJOR * 1000 + KCACHE_C_VERSION_MINOR);
  EXPECT_STRNE(kcache_release(), "");
  EXPECT_STREQ(kcache_code_name(KCACHE_OK), "OK");
  EXPECT_STREQ(kcache_code_name(KCACHE_CONFLICT), "Conflict");
  EXPECT_STREQ(kcache_code_name(KCACHE_BUSY), "Busy");
  EXPECT_STREQ(kcache_code_name(99), "Unknown");
}

class CApiCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new kcache::testing::TempDir();
    server_ = new kcache::testing::ServeProcess(kcache::testing::StartServe(
        "--listen 127.0.0.1:0 --pods 60 --namespaces 3 --nodes 2 --creates 0 --updates 0 "
        "--relabels 0 --deletes 0"));
    CommandResult sync = RunCommand(KcacheBin() + " sync pods nodes --server " + server_->url +
                                    " --cache " + dir_->Sub("synced") + " --until-synced 2>&1");
    ASSERT_EQ(sync.exit_code, 0) << sync.output;
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static kcache::testing::TempDir* dir_;
  static kcache::testing::ServeProcess* server_;
};
kcache::testing::TempDir* CApiCacheTest::dir_ = nullptr;
kcache::testing::ServeProcess* CApiCacheTest::server_ = nullptr;

TEST_F(CApiCacheTest, ReadsWithSelectorsStreamed) {
  kcache_cache* cache = nullptr;
  EXPECT_KC_OK(kcache_cache_open_read_only(dir_->Sub("synced").c_str(), nullptr, &cache, &kc_err));
  ASSERT_NE(cache, nullptr);

  char* json = nullptr;
  size_t len = 0;
  EXPECT_KC_OK(kcache_cache_keyspaces(cache, &json, &len, &kc_err));
  EXPECT_EQ(Take(json), R"(["nodes","pods"])");
  EXPECT_KC_OK(kcache_cache_stats(cache, "pods", &json, &len, &kc_err));
  nlohmann::json stats = nlohmann::json::parse(Take(json));
  EXPECT_EQ(stats["objects"], 60) << stats;
  EXPECT_EQ(stats["resource"]["kind"], "Pod") << stats;
  EXPECT_NE(stats["resourceVersion"], "") << stats;

  kcache_iterator* it = nullptr;
  EXPECT_KC_OK(kcache_cache_list(cache, "pods", nullptr, nullptr, nullptr, &it, &kc_err));
  std::map<std::string, nlohmann::json> all = Drain(it);
  ASSERT_EQ(all.size(), 60u);
  EXPECT_KC_OK(kcache_cache_list(cache, "pods", "ns-1", nullptr, nullptr, &it, &kc_err));
  std::map<std::string, nlohmann::json> ns1 = Drain(it);
  EXPECT_GT(ns1.size(), 0u);
  EXPECT_LT(ns1.size(), 60u);
  for (const auto& [key, pod] : ns1) EXPECT_EQ(pod["metadata"]["namespace"], "ns-1") << key;
  EXPECT_KC_OK(
      kcache_cache_list(cache, "pods", "", "track=canary", "status.phase=Running", &it, &kc_err));
  std::map<std::string, nlohmann::json> canary = Drain(it);
  size_t expected = 0;
  for (const auto& [key, pod] : all) {
    expected +=
        pod["metadata"]["labels"]["track"] == "canary" && pod["status"]["phase"] == "Running";
  }
  EXPECT_EQ(canary.size(), expected);

  // One object by key; a missing one, a bad selector, an unknown keyspace.
  const std::string first = all.begin()->first;
  EXPECT_KC_OK(kcache_cache_get(cache, "pods", first.c_str(), &json, &len, &kc_err));
  EXPECT_EQ(nlohmann::json::parse(Take(json)), all.begin()->second);
  char* err = nullptr;
  EXPECT_EQ(kcache_cache_get(cache, "pods", "ns-1/nope", &json, &len, &err), KCACHE_NOT_FOUND);
  EXPECT_EQ(Take(err), "pods \"ns-1/nope\" not found");
  EXPECT_EQ(kcache_cache_list(cache, "pods", nullptr, "a in (", nullptr, &it, &err),
            KCACHE_INVALID_ARGUMENT);
  EXPECT_NE(Take(err), "");
  EXPECT_EQ(kcache_cache_list(cache, "widgets", nullptr, nullptr, nullptr, &it, &err),
            KCACHE_NOT_FOUND);
  EXPECT_EQ(Take(err), "the cache has no keyspace \"widgets\"");
  EXPECT_EQ(kcache_cache_get(cache, "pods", nullptr, &json, &len, nullptr),
            KCACHE_INVALID_ARGUMENT);
  kcache_cache_close(cache);

  // A cache that is not there, and one locked by a writer.
  EXPECT_EQ(kcache_cache_open_read_only(dir_->Sub("absent").c_str(), nullptr, &cache, &err),
            KCACHE_NOT_FOUND);
  EXPECT_NE(Take(err), "");
  kcache_cache* writer = nullptr;
  EXPECT_KC_OK(kcache_cache_open(dir_->Sub("synced").c_str(), nullptr, &writer, &kc_err));
  EXPECT_EQ(kcache_cache_open(dir_->Sub("synced").c_str(), nullptr, &cache, &err), KCACHE_BUSY);
  EXPECT_NE(Take(err), "");
  kcache_cache_close(writer);
}

TEST_F(CApiCacheTest, SnapshotsExportVerifyOpenAndImport) {
  kcache_cache* cache = nullptr;
  EXPECT_KC_OK(kcache_cache_open_read_only(dir_->Sub("synced").c_str(), nullptr, &cache, &kc_err));
  const std::string file = dir_->Sub("c.kcs");
  char* manifest = nullptr;
  size_t len = 0;
  EXPECT_KC_OK(kcache_snapshot_export(cache, file.c_str(), 0, &manifest, &len, &kc_err));
  nlohmann::json m = nlohmann::json::parse(Take(manifest));
  ASSERT_EQ(m["resources"].size(), 2u) << m;
  EXPECT_EQ(m["resources"][1]["name"], "pods");
  EXPECT_EQ(m["resources"][1]["objects"], 60);
  kcache_cache_close(cache);

  EXPECT_KC_OK(kcache_snapshot_verify(file.c_str(), nullptr, &manifest, &len, &kc_err));
  EXPECT_EQ(nlohmann::json::parse(Take(manifest))["resources"], m["resources"]);
  kcache_cache* snap = nullptr;
  EXPECT_KC_OK(kcache_snapshot_open(file.c_str(), nullptr, &snap, &kc_err));
  kcache_iterator* it = nullptr;
  EXPECT_KC_OK(kcache_cache_list(snap, "nodes", nullptr, nullptr, nullptr, &it, &kc_err));
  EXPECT_EQ(Drain(it).size(), 2u);
  kcache_cache_close(snap);

  EXPECT_KC_OK(kcache_snapshot_import(file.c_str(), dir_->Sub("imported").c_str(), nullptr, nullptr,
                                      nullptr, &kc_err));
  kcache_cache* imported = nullptr;
  EXPECT_KC_OK(
      kcache_cache_open_read_only(dir_->Sub("imported").c_str(), nullptr, &imported, &kc_err));
  EXPECT_KC_OK(kcache_cache_list(imported, "pods", nullptr, nullptr, nullptr, &it, &kc_err));
  EXPECT_EQ(Drain(it).size(), 60u);
  kcache_cache_close(imported);

  // A damaged file is Corruption, and says where.
  CommandResult damage =
      RunCommand("printf 'XXXX' | dd of=" + file + " bs=1 seek=200 conv=notrunc status=none");
  ASSERT_EQ(damage.exit_code, 0);
  char* err = nullptr;
  EXPECT_EQ(kcache_snapshot_verify(file.c_str(), nullptr, &manifest, &len, &err),
            KCACHE_CORRUPTION);
  EXPECT_NE(Take(err), "");
}

// What the handlers saw, from the factory's threads.
struct Seen {
  std::mutex mu;
  std::set<std::string> names;
  int initial = 0, adds = 0, updates = 0, deletes = 0;
};

std::string NameOf(const char* json, size_t len) {
  return nlohmann::json::parse(std::string(json, len))["metadata"]["name"];
}

void OnAdd(void* user, const char* json, size_t len, int initial) {
  auto* s = static_cast<Seen*>(user);
  std::lock_guard<std::mutex> lock(s->mu);
  s->names.insert(NameOf(json, len));
  ++s->adds;
  s->initial += initial;
}
void OnUpdate(void* user, const char*, size_t, const char*, size_t) {
  auto* s = static_cast<Seen*>(user);
  std::lock_guard<std::mutex> lock(s->mu);
  ++s->updates;
}
void OnDelete(void* user, const char* json, size_t len, int) {
  auto* s = static_cast<Seen*>(user);
  std::lock_guard<std::mutex> lock(s->mu);
  s->names.erase(NameOf(json, len));
  ++s->deletes;
}

TEST_F(CApiCacheTest, InformersWriteAndResumeWithoutAList) {
  const std::string dir = dir_->Sub("informed");
  // Twenty ConfigMaps for the first list to bring.
  CommandResult made =
      RunCommand("for i in $(seq 20); do curl -sf -X POST -H 'Content-Type: application/json' " +
                 server_->url +
                 "/api/v1/namespaces/ns-1/configmaps -d \"{\\\"metadata\\\": "
                 "{\\\"name\\\": \\\"cm-$i\\\"}}\" >/dev/null || exit 1; done 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  kcache_factory_options* fo = kcache_factory_options_create();
  kcache_factory_options_set_server(fo, server_->url.c_str());
  kcache_factory_options_set_kubeconfig(fo, "/nonexistent-kubeconfig");

  kcache_cache* cache = nullptr;
  EXPECT_KC_OK(kcache_cache_open(dir.c_str(), nullptr, &cache, &kc_err));
  kcache_factory* factory = nullptr;
  char* err = nullptr;
  // The kubeconfig named must exist, as kubectl's --kubeconfig.
  EXPECT_EQ(kcache_factory_create(cache, fo, &factory, &err), KCACHE_NOT_FOUND);
  EXPECT_NE(Take(err), "");
  kcache_factory_options_set_kubeconfig(fo, nullptr);
  EXPECT_KC_OK(kcache_factory_create(cache, fo, &factory, &kc_err));
  kcache_informer* cms = nullptr;
  EXPECT_EQ(kcache_factory_informer(factory, "gadgets", &cms, &err), KCACHE_NOT_FOUND);
  EXPECT_NE(Take(err), "");
  EXPECT_KC_OK(kcache_factory_informer(factory, "cm", &cms, &kc_err));
  kcache_informer* again = nullptr;
  EXPECT_KC_OK(kcache_factory_informer(factory, "configmaps", &again, &kc_err));
  EXPECT_EQ(again, cms) << "one informer, one handle, per resource";
  Seen seen;
  EXPECT_KC_OK(kcache_informer_add_handler(cms, OnAdd, OnUpdate, OnDelete, &seen, &kc_err));
  EXPECT_KC_OK(kcache_factory_start(factory, &kc_err));
  EXPECT_KC_OK(kcache_factory_wait_for_cache_sync(factory, 30000, &kc_err));
  EXPECT_EQ(kcache_informer_has_synced(cms), 1);
  // The first sync gets every object: a LIST, or a watch that starts with
  // them (sendInitialEvents), which kcache uses where the server has it.
  const double listed =
      Metric(server_->url, "kcache_serve_list_items_total", "resource=\"configmaps\"");
  const double watch_lists =
      Metric(server_->url, "kcache_serve_watch_lists_total", "resource=\"configmaps\"");
  EXPECT_EQ(watch_lists + (listed >= 20 ? 1 : 0), 1)
      << RunCommand("curl -s " + server_->url + "/metrics").output;

  // Writes: create, a stale update refused as a conflict, a patch, then
  // reads that wait for the write's version.
  const std::string cm = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-api"},)"
                         R"("data":{"a":"1"}})";
  char* result = nullptr;
  size_t len = 0;
  EXPECT_KC_OK(
      kcache_informer_create_object(cms, "ns-0", cm.data(), cm.size(), &result, &len, &kc_err));
  nlohmann::json created = nlohmann::json::parse(Take(result));
  const std::string rv = created["metadata"]["resourceVersion"];
  EXPECT_EQ(
      kcache_informer_create_object(cms, "ns-0", cm.data(), cm.size(), nullptr, nullptr, &err),
      KCACHE_ALREADY_EXISTS);
  EXPECT_NE(Take(err), "");
  const std::string patch = R"({"data":{"b":"2"}})";
  EXPECT_KC_OK(kcache_informer_patch_object(cms, "ns-0", "c-api", KCACHE_PATCH_MERGE, patch.data(),
                                            patch.size(), &result, &len, &kc_err));
  const std::string patched_rv = nlohmann::json::parse(Take(result))["metadata"]["resourceVersion"];
  const std::string stale = created.dump();  // carries the first resourceVersion
  EXPECT_EQ(
      kcache_informer_update_object(cms, "", stale.data(), stale.size(), nullptr, nullptr, &err),
      KCACHE_CONFLICT);
  EXPECT_NE(Take(err).find("modified"), std::string::npos);
  EXPECT_KC_OK(kcache_informer_wait_for_resource_version(cms, patched_rv.c_str(), 10000, &kc_err));
  EXPECT_KC_OK(kcache_informer_get(cms, "ns-0", "c-api", &result, &len, &kc_err));
  EXPECT_EQ(nlohmann::json::parse(Take(result))["data"], (nlohmann::json{{"a", "1"}, {"b", "2"}}));
  kcache_iterator* it = nullptr;
  EXPECT_KC_OK(kcache_informer_list(cms, "ns-0", nullptr, "metadata.name=c-api", &it, &kc_err));
  EXPECT_EQ(Drain(it).size(), 1u);
  EXPECT_EQ(Take(kcache_informer_resource_version(cms)).empty(), false);
  // Handlers run apart from the store: the patch reaches them soon after.
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(seen.mu);
    return seen.names.count("c-api") == 1 && seen.updates >= 1;
  }));
  kcache_factory_destroy(factory);
  kcache_cache_close(cache);

  // A new process would do this: the same cache, a new factory. It starts
  // from the cache (initial adds) and resumes the watch with no LIST.
  EXPECT_KC_OK(kcache_cache_open(dir.c_str(), nullptr, &cache, &kc_err));
  EXPECT_KC_OK(kcache_factory_create(cache, fo, &factory, &kc_err));
  EXPECT_KC_OK(kcache_factory_informer(factory, "configmaps", &cms, &kc_err));
  Seen resumed;
  EXPECT_KC_OK(kcache_informer_add_handler(cms, OnAdd, nullptr, OnDelete, &resumed, &kc_err));
  EXPECT_KC_OK(kcache_factory_start(factory, &kc_err));
  EXPECT_KC_OK(kcache_factory_wait_for_cache_sync(factory, 30000, &kc_err));
  EXPECT_KC_OK(kcache_informer_delete_object(cms, "ns-0", "c-api", &kc_err));
  EXPECT_EQ(kcache_informer_delete_object(cms, "ns-0", "c-api", &err), KCACHE_NOT_FOUND);
  EXPECT_NE(Take(err), "");
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(resumed.mu);
    return resumed.deletes > 0;
  }));
  {
    std::lock_guard<std::mutex> lock(resumed.mu);
    EXPECT_EQ(resumed.deletes, 1);
    EXPECT_EQ(resumed.names.count("c-api"), 0u);
    EXPECT_EQ(resumed.initial, resumed.adds) << "every object came from the cache";
    EXPECT_EQ(resumed.initial, 21) << "the twenty, and the one written";
  }
  // The resume probe lists at most one object; a relist would list all.
  EXPECT_LE(Metric(server_->url, "kcache_serve_list_items_total", "resource=\"configmaps\""),
            listed + 1);
  EXPECT_EQ(Metric(server_->url, "kcache_serve_watch_lists_total", "resource=\"configmaps\""),
            watch_lists);
  kcache_factory_destroy(factory);
  kcache_cache_close(cache);
  kcache_factory_options_destroy(fo);
}

}  // namespace
