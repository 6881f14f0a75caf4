// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/bench/demo.h"

#include <chrono>
#include <cstdio>
#include <map>

#include <filesystem>

#include "kcache/cache.h"
#include "kcache/field_selector.h"
#include "kcache/indexer.h"
#include "kcache/label_selector.h"
#include "kcache/lister.h"
#include "tools/kcache/scratch_dir.h"
#include "tools/kcache/testcluster/pods.h"

namespace kcache::bench::demo {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

StatusOr<std::vector<std::string>> ByApp(const Object& o) {
  auto it = o.labels().find("app");
  if (it == o.labels().end()) return std::vector<std::string>{};
  return std::vector<std::string>{it->second};
}

// The cluster at `generation`: every pod, with some relabelled, deleted and
// added at each later generation.
StatusOr<std::vector<ObjectPtr>> Cluster(const DemoOptions& o, int generation, size_t* json_bytes,
                                         size_t* stored_bytes) {
  serve::synth::PodOptions po{.seed = 7, .namespaces = o.namespaces};
  std::vector<ObjectPtr> pods;
  int total = o.pods + generation * (o.pods / 100);  // 1% new pods per generation
  for (int i = 0; i < total; ++i) {
    if (generation > 0 && i % 97 == 0) continue;  // deleted since
    uint64_t rv = 1000 + static_cast<uint64_t>(i);
    if (generation > 0 && i % 31 == 0) rv += 1000000;  // changed since
    std::string json = serve::synth::PodJson(po, static_cast<uint64_t>(i), rv);
    if (json_bytes) *json_bytes += json.size();
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr pod,
                            Object::Parse(std::move(json), {.drop_managed_fields = true}));
    if (stored_bytes) *stored_bytes += pod->byte_size();
    pods.push_back(std::move(pod));
  }
  return pods;
}

void PrintPods(const std::vector<ObjectPtr>& pods, size_t max, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %-40s %-10s %s\n", "NAMESPACE", "NAME", "RV", "LABELS");
  out << line;
  for (size_t i = 0; i < pods.size() && i < max; ++i) {
    std::snprintf(line, sizeof line, "%-8s %-40s %-10s %s\n", pods[i]->namespace_().c_str(),
                  pods[i]->name().c_str(), pods[i]->resource_version().c_str(),
                  LabelsToString(pods[i]->labels()).c_str());
    out << line;
  }
  if (pods.size() > max) out << "... " << pods.size() - max << " more\n";
}

}  // namespace

Status RunDemo(const DemoOptions& o, std::ostream& out) {
  if (o.pods < 100 || o.namespaces < 1) {
    return Status::InvalidArgument("--pods must be at least 100 and --namespaces at least 1");
  }
  char line[512];
  out << "kcache demo: an Indexer over a synthetic cluster (no API server needed)\n\n";

  auto start = Clock::now();
  size_t json_bytes = 0, stored_bytes = 0;
  KCACHE_ASSIGN_OR_RETURN(std::vector<ObjectPtr> pods, Cluster(o, 0, &json_bytes, &stored_bytes));
  std::shared_ptr<Indexer> store = NewMemoryIndexer({.indexers = {{"app", ByApp}}});
  KCACHE_ASSIGN_OR_RETURN(ReplaceResult first, store->Replace(std::move(pods), "1000"));
  double secs = Since(start);
  std::snprintf(
      line, sizeof line,
      "initial list: %zu pods generated, decoded and indexed in %.2f s (%.0f pods/s); %.1f MB of "
      "JSON, %.1f MB kept after dropping managedFields\n",
      first.changes.size(), secs, first.changes.size() / secs, json_bytes / 1e6,
      stored_bytes / 1e6);
  out << line;

  auto namespaces = store->ListIndexFuncValues(kNamespaceIndex);
  KCACHE_RETURN_IF_ERROR(namespaces.status());
  out << "namespaces:";
  for (const std::string& ns : *namespaces)
    out << " " << ns << "=" << store->IndexKeys(kNamespaceIndex, ns)->size();
  out << "\n\n";

  Lister lister(store, {"", "pods"});
  KCACHE_ASSIGN_OR_RETURN(LabelSelector canary, LabelSelector::Parse("tier=web,track=canary"));
  out << "$ kcache get pods -n ns-3 -l 'tier=web,track=canary'    (namespace index + selector)\n";
  KCACHE_ASSIGN_OR_RETURN(std::vector<ObjectPtr> hits, lister.Namespace("ns-3").List(canary));
  PrintPods(hits, 5, out);

  out << "\n$ kcache get pods -A -l 'app in (checkout-1,search-3)'    (selector over every pod)\n";
  KCACHE_ASSIGN_OR_RETURN(LabelSelector apps, LabelSelector::Parse("app in (checkout-1,search-3)"));
  KCACHE_ASSIGN_OR_RETURN(hits, lister.List(apps));
  PrintPods(hits, 4, out);

  out << "\n$ kcache get pods -A --field-selector spec.nodeName=node-7    (field selector)\n";
  KCACHE_ASSIGN_OR_RETURN(FieldSelector on_node, FieldSelector::Parse("spec.nodeName=node-7"));
  std::vector<ObjectPtr> on;
  KCACHE_RETURN_IF_ERROR(ListAll(*store, LabelSelector::Everything(), [&](const ObjectPtr& p) {
    if (on_node.Matches(*p)) on.push_back(p);
    return true;
  }));
  PrintPods(on, 3, out);

  out << "\nrelist after churn (1% added, ~3% changed, ~1% deleted): Replace diffs by "
         "resourceVersion\n";
  start = Clock::now();
  KCACHE_ASSIGN_OR_RETURN(pods, Cluster(o, 1, nullptr, nullptr));
  KCACHE_ASSIGN_OR_RETURN(ReplaceResult relist, store->Replace(std::move(pods), "2000000"));
  std::map<StoreChange::Type, int> counts;
  for (const StoreChange& c : relist.changes) counts[c.type]++;
  std::snprintf(line, sizeof line,
                "  %d added, %d updated, %d deleted (tombstones for handlers), %zu unchanged and "
                "not rewritten; %.2f s\n",
                counts[StoreChange::Type::kAdded], counts[StoreChange::Type::kUpdated],
                counts[StoreChange::Type::kDeleted], relist.unchanged, Since(start));
  out << line;
  out << "  resume resourceVersion: " << store->LastSyncResourceVersion() << "\n";

  // The same cluster in a cache on disk, then a restart.
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<tool::ScratchDir> work,
                          tool::ScratchDir::Create("kcache-demo"));
  const std::string dir = work->path() + "/cache";
  out << "\npersistent cache in " << dir << "\n";
  {
    start = Clock::now();
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(dir));
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> on_disk, cache->OpenKeyspace("pods"));
    KCACHE_ASSIGN_OR_RETURN(std::vector<ObjectPtr> all, store->List());
    Transaction txn;
    for (ObjectPtr& p : all) txn.Add(std::move(p));
    txn.resource_version = store->LastSyncResourceVersion();
    KCACHE_RETURN_IF_ERROR(on_disk->Commit(txn, nullptr));
    std::snprintf(line, sizeof line,
                  "  committed %zu pods with their index entries and resume point %s in one "
                  "batch: %.2f s\n",
                  *on_disk->Size(), on_disk->LastSyncResourceVersion().c_str(), Since(start));
    out << line;
  }  // closed, as a process that exits
  start = Clock::now();
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(dir));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> on_disk, cache->OpenKeyspace("pods"));
  double reopen = Since(start);
  Lister reopened(on_disk, {"", "pods"});
  KCACHE_ASSIGN_OR_RETURN(hits, reopened.Namespace("ns-3").List(canary));
  std::snprintf(line, sizeof line,
                "  restart: reopened in %.3f s with %zu pods, resume point %s (a watch would "
                "resume here, no LIST); ns-3 canaries: %zu\n",
                reopen, *on_disk->Size(), on_disk->LastSyncResourceVersion().c_str(), hits.size());
  out << line;
  KCACHE_RETURN_IF_ERROR(cache->Verify());
  out << "  verify: every index entry has its object, every object its entries\n";
  return Status::OK();
}

}  // namespace kcache::bench::demo
