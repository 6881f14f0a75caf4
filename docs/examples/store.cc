// SPDX-License-Identifier: Apache-2.0

// The in-memory indexer with a lister and a label selector, and the
// persistent store's atomic commit with its resume point, built against an
// installed kcache:
//
//   store DIR

#include <kcache/cache.h>
#include <kcache/indexer.h>
#include <kcache/label_selector.h>
#include <kcache/lister.h>
#include <kcache/object.h>

#include <iostream>
#include <memory>
#include <string>

namespace {

std::string Pod(const std::string& name, const std::string& app, const std::string& rv) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","namespace":"default","resourceVersion":")" + rv + R"(","labels":{"app":")" + app +
         R"("}}})";
}

kcache::Status Run(const std::string& dir) {
  // In memory.
  std::shared_ptr<kcache::Indexer> store = kcache::NewMemoryIndexer();
  kcache::ParseOptions parse;
  parse.drop_managed_fields = true;
  int n = 0;
  for (const char* app : {"web", "web", "db"}) {
    KCACHE_ASSIGN_OR_RETURN(auto pod,
                            kcache::Object::Parse(Pod("p" + std::to_string(n++), app, "1"), parse));
    KCACHE_RETURN_IF_ERROR(store->Add(pod));
  }
  kcache::Lister pods(store, {"", "pods"});
  KCACHE_ASSIGN_OR_RETURN(auto selector, kcache::LabelSelector::Parse("app in (web)"));
  KCACHE_ASSIGN_OR_RETURN(auto web, pods.Namespace("default").List(selector));
  std::cout << "memory: " << web.size() << " of 3 pods match " << selector.String() << "\n";

  // On disk: objects, index entries and the resume point in one commit.
  {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Cache> cache, kcache::Cache::Open(dir));
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Indexer> keyspace, cache->OpenKeyspace("pods"));
    kcache::Transaction txn;
    KCACHE_ASSIGN_OR_RETURN(auto pod, kcache::Object::Parse(Pod("web-1", "web", "48213")));
    txn.Add(pod);
    txn.resource_version = "48213";
    KCACHE_RETURN_IF_ERROR(keyspace->Commit(txn, nullptr));
  }
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Cache> reopened, kcache::Cache::Open(dir));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Indexer> keyspace,
                          reopened->OpenKeyspace("pods"));
  KCACHE_ASSIGN_OR_RETURN(auto keys, keyspace->ListKeys());
  std::cout << "disk: resume point " << keyspace->LastSyncResourceVersion() << ", " << keys.size()
            << " object\n";
  return kcache::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: store DIR\n";
    return 2;
  }
  kcache::Status st = Run(argv[1]);
  if (!st.ok()) {
    std::cerr << "error: " << st << "\n";
    return 1;
  }
  return 0;
}
