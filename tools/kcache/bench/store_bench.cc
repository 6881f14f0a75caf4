// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/bench/store_bench.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "kcache/cache.h"
#include "kcache/lister.h"
#include "persist/db.h"
#include "persist/rocks_status.h"
#include "tools/kcache/bench/timing.h"
#include "tools/kcache/resident.h"
#include "tools/kcache/scratch_dir.h"
#include "tools/kcache/testcluster/pods.h"

namespace kcache::bench {
namespace {

// One batch of synthetic pods, as the API server would send them.
std::vector<std::string> Batch(int first, int n) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  serve::synth::PodOptions po{.seed = 3, .namespaces = 10};
  for (int i = first; i < first + n; ++i) {
    out.push_back(
        serve::synth::PodJson(po, static_cast<uint64_t>(i), 1000 + static_cast<uint64_t>(i)));
  }
  return out;
}

std::string KeyOf(const std::string& json) {
  // "namespace/name" the way the cache keys it, found without a parser:
  // the generator writes name before namespace in metadata.
  auto field = [&](const char* f) {
    size_t at = json.find(f) + std::strlen(f);
    return json.substr(at, json.find('"', at) - at);
  };
  return field("\"namespace\":\"") + "/" + field("\"name\":\"");
}

template <typename F>
double Median(int runs, F f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    f();
    t.push_back(Seconds(Clock::now() - start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Watch events (modifications, in commits of 16 as a watch delivers them)
// into a listed keyspace, with the change journal off and on: the cost of
// journaling each change with its previous object.
Status RunWatchEvents(const StoreBenchOptions& o, CacheOptions copts, const std::string& root,
                      std::ostream& out) {
  const int pods = std::min(o.objects, 10000);
  const int events = 5 * pods;
  constexpr int kPerCommit = 16;
  double rate[2] = {0, 0};
  JournalStats journal;
  for (int on = 0; on < 2; ++on) {
    copts.journal.max_events = on ? JournalOptions().max_events : 0;
    const std::string dir = root + (on ? "/watch-journal" : "/watch-plain");
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(dir, copts));
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> store,
                            cache->OpenKeyspace("pods", {.label_index = o.label_index}));
    std::vector<ObjectPtr> listed;
    for (std::string& d : Batch(0, pods)) {
      KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Object::Parse(std::move(d)));
      listed.push_back(std::move(obj));
    }
    const uint64_t list_rv = 1000 + static_cast<uint64_t>(pods);
    KCACHE_RETURN_IF_ERROR(store->Replace(std::move(listed), std::to_string(list_rv)).status());
    serve::synth::PodOptions po{.seed = 3, .namespaces = 10};
    double seconds = 0;
    for (int first = 0; first < events; first += kPerCommit) {
      std::vector<std::string> docs;
      for (int i = first; i < std::min(events, first + kPerCommit); ++i) {
        docs.push_back(serve::synth::PodJson(po, static_cast<uint64_t>(i % pods),
                                             list_rv + 1 + static_cast<uint64_t>(i)));
      }
      auto start = Clock::now();
      Transaction txn;
      for (std::string& d : docs) {
        KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Object::Parse(std::move(d)));
        txn.Update(std::move(obj));
      }
      KCACHE_RETURN_IF_ERROR(store->Commit(txn, nullptr));
      seconds += Seconds(Clock::now() - start);
    }
    rate[on] = events / seconds;
    if (on) {
      KCACHE_ASSIGN_OR_RETURN(KeyspaceStats stats, cache->Stats("pods"));
      journal = stats.journal;
    }
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "  watch events into %d pods, commits of %d: journal off %.0f events/s, on %.0f "
                "events/s, ratio %.2f; journal %zu entries, %.1f MB\n",
                pods, kPerCommit, rate[0], rate[1], rate[1] / rate[0], journal.events,
                journal.bytes / 1e6);
  out << line;
  return Status::OK();
}

// Encryption at rest: the same pods committed into, and listed from, a
// plain keyspace and a sealed one, alternating, three of each; medians.
// The difference per object is what sealing (on commit) and opening (on
// read) cost.
Status RunEncryption(const StoreBenchOptions& o, CacheOptions copts, const std::string& root,
                     std::ostream& out) {
  const int pods = std::min(o.objects, 20000);
  constexpr int kRuns = 3;
  std::vector<double> commit[2], list[2];
  uint64_t sealed_disk = 0, plain_disk = 0;
  for (int run = 0; run < 2 * kRuns; ++run) {
    const int sealed = run % 2;
    CacheOptions c = copts;
    c.journal.max_events = 0;  // the objects alone
    if (sealed) {
      c.encryption.key_encryption_key = std::string(32, 'k');
      c.encryption.keyspaces = {"pods"};
    }
    const std::string dir = root + "/encryption-" + std::to_string(run);
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(dir, c));
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> store,
                            cache->OpenKeyspace("pods", {.label_index = o.label_index}));
    double seconds = 0;
    for (int first = 0; first < pods; first += o.batch) {
      std::vector<std::string> docs = Batch(first, std::min(o.batch, pods - first));
      auto start = Clock::now();
      Transaction txn;
      for (std::string& d : docs) {
        KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Object::Parse(std::move(d)));
        txn.Add(std::move(obj));
      }
      KCACHE_RETURN_IF_ERROR(store->Commit(txn, nullptr));
      seconds += Seconds(Clock::now() - start);
    }
    commit[sealed].push_back(seconds / pods * 1e6);
    KCACHE_RETURN_IF_ERROR(cache->Compact());
    list[sealed].push_back(Median(1, [&] { (void)store->List(); }) / pods * 1e6);
    (sealed ? sealed_disk : plain_disk) = DiskBytes(dir);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  char line[256];
  std::snprintf(line, sizeof line,
                "  encryption at rest, %d pods: commit %.1f us/pod plain, %.1f sealed (+%.1f); "
                "list %.2f us/pod plain, %.2f sealed (+%.2f); disk %.1f MB plain, %.1f sealed\n",
                pods, median(commit[0]), median(commit[1]), median(commit[1]) - median(commit[0]),
                median(list[0]), median(list[1]), median(list[1]) - median(list[0]),
                plain_disk / 1e6, sealed_disk / 1e6);
  out << line;
  return Status::OK();
}

// Step 1. Raw RocksDB: the same pod bytes under the same keys, WriteBatches
// of `batch` puts, with the options of the cache's objects column family
// (same compression, block cache, memtable budget, background jobs).
// Returns the seconds in writes; adds the bytes written to `bytes`.
StatusOr<double> LoadRaw(const StoreBenchOptions& o, const rocksdb::Options& ro,
                         const std::string& dir, uint64_t* bytes) {
  double seconds = 0;
  rocksdb::DB* raw = nullptr;
  KCACHE_RETURN_IF_ERROR(storage::FromRocks(rocksdb::DB::Open(ro, dir, &raw), "open raw"));
  std::unique_ptr<rocksdb::DB> db(raw);
  for (int first = 0; first < o.objects; first += o.batch) {
    std::vector<std::string> docs = Batch(first, std::min(o.batch, o.objects - first));
    auto start = Clock::now();
    rocksdb::WriteBatch wb;
    for (const std::string& d : docs) {
      wb.Put(KeyOf(d), d);
      *bytes += d.size();
    }
    KCACHE_RETURN_IF_ERROR(storage::FromRocks(db->Write({}, &wb), "raw write"));
    seconds += Seconds(Clock::now() - start);
  }
  return seconds;
}

// Step 2. kcache: parse, index (namespace and labels) and commit the same
// pods. Returns the seconds it took.
StatusOr<double> LoadCache(const StoreBenchOptions& o, Indexer& pods) {
  double seconds = 0;
  for (int first = 0; first < o.objects; first += o.batch) {
    std::vector<std::string> docs = Batch(first, std::min(o.batch, o.objects - first));
    auto start = Clock::now();
    Transaction txn;
    for (std::string& d : docs) {
      KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Object::Parse(std::move(d)));
      txn.Add(std::move(obj));
    }
    txn.resource_version = std::to_string(1000 + first + o.batch);
    KCACHE_RETURN_IF_ERROR(pods.Commit(txn, nullptr));
    seconds += Seconds(Clock::now() - start);
  }
  return seconds;
}

// Step 3. Queries on the settled cache, each the median of `runs`.
void TimeQueries(const StoreBenchOptions& o, const Cache& cache,
                 const std::shared_ptr<Indexer>& pods, std::ostream& out) {
  char line[256];
  size_t n_ns = 0, n_label = 0, n_scan = 0;
  // Streamed, as a caller walking a large namespace would.
  double by_ns = Median(o.runs, [&] {
    n_ns = 0;
    for (auto it = pods->NewIndexIterator(kNamespaceIndex, "ns-3"); it->Valid(); it->Next()) ++n_ns;
  });
  Lister lister(pods, {"", "pods"});
  LabelSelector one_app = *LabelSelector::Parse("app=checkout-1");
  LabelSelector canary = *LabelSelector::Parse("tier=web,track=canary");
  double by_label = Median(o.runs, [&] { n_label = lister.List(one_app)->size(); });
  double by_label_ns =
      Median(o.runs, [&] { n_scan = lister.Namespace("ns-3").List(canary)->size(); });
  LabelSelector no_index = *LabelSelector::Parse("track!=stable,tier notin (api,worker)");
  size_t n_noindex = 0;
  double scan = Median(std::max(1, o.runs / 2), [&] {
    n_noindex = 0;
    (void)ListAll(*pods, no_index, [&](const ObjectPtr&) { return ++n_noindex, true; });
  });
  // A whole scan against RocksDB's own iteration of the same column
  // family: what reading objects back costs beyond reading their bytes.
  const std::shared_ptr<storage::Db>& db = storage::DbOf(cache);
  size_t n_raw = 0, n_all = 0;
  uint64_t raw_bytes = 0;
  double raw_scan = Median(o.runs, [&] {
    n_raw = 0;
    raw_bytes = 0;
    std::unique_ptr<rocksdb::Iterator> it(db->db->NewIterator({}, db->objects));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      raw_bytes += it->value().size();
      ++n_raw;
    }
  });
  double all_scan = Median(o.runs, [&] {
    n_all = 0;
    for (auto it = pods->NewIterator(); it->Valid(); it->Next()) {
      n_all += it->object()->has_metadata();
    }
  });
  std::snprintf(line, sizeof line,
                "  scan, raw RocksDB iteration:           %9.1f ms for %zu rows (%.2f us/row, "
                "%.0f MB/s)\n",
                raw_scan * 1e3, n_raw, raw_scan * 1e6 / std::max<size_t>(n_raw, 1),
                raw_bytes / raw_scan / 1e6);
  out << line;
  std::snprintf(line, sizeof line,
                "  scan, kcache objects:                  %9.1f ms for %zu pods (%.2f us/pod)  "
                "ratio %.2f\n",
                all_scan * 1e3, n_all, all_scan * 1e6 / std::max<size_t>(n_all, 1),
                raw_scan / all_scan);
  out << line;
  std::snprintf(line, sizeof line,
                "  namespace ns-3, streamed:              %9.1f ms for %zu pods (%.1f us/pod)\n",
                by_ns * 1e3, n_ns, by_ns * 1e6 / std::max<size_t>(n_ns, 1));
  out << line;
  std::snprintf(line, sizeof line,
                "  list -l app=checkout-1 (label index):   %9.3f ms for %zu pods\n", by_label * 1e3,
                n_label);
  out << line;
  std::snprintf(line, sizeof line,
                "  list -n ns-3 -l tier=web,track=canary:  %9.1f ms for %zu pods\n",
                by_label_ns * 1e3, n_scan);
  out << line;
  std::snprintf(line, sizeof line,
                "  list -l 'track!=stable,...' (a scan):   %9.1f ms for %zu pods\n", scan * 1e3,
                n_noindex);
  out << line;
}

// Point reads of random keys by a reader that has just opened the cache:
// its block cache holds none of their blocks (the files are in the page
// cache), so each Get inflates a block; then the same keys again, from its
// block cache. Medians over the runs of microseconds per Get.
Status TimeGets(const StoreBenchOptions& o, const std::string& dir, const Indexer& pods,
                std::ostream& out) {
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> keys, pods.ListKeys());
  std::mt19937 rng(20261127);
  std::shuffle(keys.begin(), keys.end(), rng);
  keys.resize(std::min<size_t>(keys.size(), 1000));
  if (keys.empty()) return Status::OK();
  std::vector<double> cold, warm;
  for (int run = 0; run < o.runs; ++run) {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> reader, Cache::OpenReadOnly(dir));
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> store,
                            reader->OpenKeyspace("pods", {.label_index = o.label_index}));
    for (std::vector<double>* times : {&cold, &warm}) {
      auto start = Clock::now();
      for (const std::string& key : keys) {
        KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, store->GetByKey(key));
        if (!obj) return Status::Internal("bench: " + key + " is listed but not found");
      }
      times->push_back(Seconds(Clock::now() - start) * 1e6 / keys.size());
    }
  }
  std::sort(cold.begin(), cold.end());
  std::sort(warm.begin(), warm.end());
  char line[256];
  std::snprintf(line, sizeof line,
                "  get by key, %zu random keys:          %6.1f us/get from a cold block cache, "
                "%.1f warm\n",
                keys.size(), cold[cold.size() / 2], warm[warm.size() / 2]);
  out << line;
  return Status::OK();
}

// Step 4. Both databases compacted to their final shape, and their sizes.
Status ReportDisk(const StoreBenchOptions& o, const rocksdb::Options& ro, const CacheOptions& copts,
                  const std::string& root, uint64_t bytes, std::ostream& out) {
  {  // with the options it was written with
    rocksdb::DB* db = nullptr;
    KCACHE_RETURN_IF_ERROR(
        storage::FromRocks(rocksdb::DB::Open(ro, root + "/raw", &db), "reopen raw"));
    db->CompactRange({}, nullptr, nullptr).PermitUncheckedError();
    delete db;
  }
  // Reopening turns the cache's log into tables, as the raw reopen did.
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(root + "/cache", copts));
  cache.reset();
  char line[256];
  std::snprintf(
      line, sizeof line,
      "  disk: JSON %.0f MB; raw RocksDB %.0f MB; kcache %.0f MB (zstd dictionary %d bytes, "
      "first list in %s)\n",
      bytes / 1e6, DiskBytes(root + "/raw") / 1e6, DiskBytes(root + "/cache") / 1e6,
      o.zstd_dictionary_bytes, o.fast_first_list ? "LZ4" : "zstd");
  out << line;
  return Status::OK();
}

}  // namespace

Status RunStoreBench(const StoreBenchOptions& o, std::ostream& out) {
  if (o.objects <= 0 || o.batch <= 0 || o.runs <= 0) {
    return Status::InvalidArgument("--objects, --batch and --runs must be positive");
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<tool::ScratchDir> work,
                          tool::ScratchDir::Create("kcache-bench", o.dir));
  const std::string root = work->path();
  char line[256];
  const size_t rss_start = tool::ResidentBytes();

  CacheOptions copts;
  copts.zstd_dictionary_bytes = static_cast<size_t>(o.zstd_dictionary_bytes);
  copts.fast_first_list = o.fast_first_list;

  uint64_t bytes = 0;
  rocksdb::Options ro = storage::ObjectsLikeOptions(copts);
  ro.create_if_missing = true;
  KCACHE_ASSIGN_OR_RETURN(const double raw_seconds, LoadRaw(o, ro, root + "/raw", &bytes));

  const std::string cache_dir = root + "/cache";
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(cache_dir, copts));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> pods,
                          cache->OpenKeyspace("pods", {.label_index = o.label_index}));
  KCACHE_ASSIGN_OR_RETURN(const double cache_seconds, LoadCache(o, *pods));
  const size_t rss_loaded = tool::ResidentBytes();
  // Queries are timed on a settled database: no compaction competing for
  // the two cores.
  auto compact_start = Clock::now();
  KCACHE_RETURN_IF_ERROR(cache->Compact());
  const double compact_seconds = Seconds(Clock::now() - compact_start);
  const size_t rss_compacted = tool::ResidentBytes();

  std::snprintf(
      line, sizeof line,
      "store: %d realistic pods, %.0f bytes each, batches of %d, %d query runs (medians)\n",
      o.objects, double(bytes) / o.objects, o.batch, o.runs);
  out << line;
  std::snprintf(line, sizeof line,
                "  ingest, raw RocksDB batched puts:       %9.0f pods/s %7.1f MB/s\n",
                o.objects / raw_seconds, bytes / raw_seconds / 1e6);
  out << line;
  std::snprintf(line, sizeof line,
                "  ingest, kcache parse+index+commit:      %9.0f pods/s %7.1f MB/s  ratio %.2f\n",
                o.objects / cache_seconds, bytes / cache_seconds / 1e6,
                raw_seconds / cache_seconds);
  out << line;

  TimeQueries(o, *cache, pods, out);
  KCACHE_RETURN_IF_ERROR(TimeGets(o, cache_dir, *pods, out));
  // Memory, then (step 4) disk.
  std::snprintf(
      line, sizeof line,
      "  RSS: %.0f MB at start, %.0f MB after loading, %.0f MB after compacting (%.1f s), %.0f MB "
      "after the queries; configured: %zu MB block cache + %zu MB memtables\n",
      rss_start / 1e6, rss_loaded / 1e6, rss_compacted / 1e6, compact_seconds,
      tool::ResidentBytes() / 1e6, copts.block_cache_bytes >> 20, copts.memtable_bytes >> 20);
  out << line;
  pods.reset();
  cache.reset();
  KCACHE_RETURN_IF_ERROR(ReportDisk(o, ro, copts, root, bytes, out));
  KCACHE_RETURN_IF_ERROR(RunWatchEvents(o, copts, root, out));
  return RunEncryption(o, copts, root, out);
}

}  // namespace kcache::bench
