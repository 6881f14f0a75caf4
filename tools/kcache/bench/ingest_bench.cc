// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/bench/ingest_bench.h"

#include <dirent.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "kcache/informer_factory.h"
#include "persist/db.h"
#include "persist/rocks_status.h"
#include "tools/kcache/bench/timing.h"
#include "tools/kcache/scratch_dir.h"
#include "tools/kcache/testcluster/server.h"

namespace kcache::bench {
namespace {

// CPU seconds (user + system) of each live thread of this process, by tid,
// with the thread's name.
struct ThreadCpu {
  std::string name;
  double seconds = 0;
};
std::map<int, ThreadCpu> ThreadsCpu() {
  std::map<int, ThreadCpu> out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string line;
    std::getline(f, line);
    size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    std::vector<std::string> fields;
    while (rest >> field) fields.push_back(field);
    if (fields.size() < 13) continue;  // state is field 3; utime 14, stime 15
    out[std::atoi(e->d_name)] = {line.substr(open + 1, close - open - 1),
                                 (std::stod(fields[11]) + std::stod(fields[12])) / tick};
  }
  closedir(dir);
  return out;
}

// CPU spent between two readings, by thread name (threads of one name
// summed; threads that ended in between are not counted).
std::map<std::string, double> CpuByName(const std::map<int, ThreadCpu>& before,
                                        const std::map<int, ThreadCpu>& after) {
  std::map<std::string, double> out;
  for (const auto& [tid, t] : after) {
    auto b = before.find(tid);
    out[t.name] += t.seconds - (b == before.end() ? 0 : b->second.seconds);
  }
  return out;
}

// CPU seconds (user + system) of this process so far, its ended threads
// included.
double ProcessCpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(ru.ru_utime) + seconds(ru.ru_stime);
}

// The options of both sides' databases.
CacheOptions CacheOptionsOf(const IngestBenchOptions& o) {
  CacheOptions copts;
  if (o.zstd_dictionary_bytes >= 0) copts.zstd_dictionary_bytes = o.zstd_dictionary_bytes;
  copts.fast_first_list = o.fast_first_list;
  return copts;
}

struct SyncRun {
  double seconds = 0;
  uint64_t objects = 0;
  uint64_t bytes = 0;
  double cpu_total = 0;               // the process's
  std::map<std::string, double> cpu;  // by thread name
  // The label index's merge, which runs on after the sync: time from
  // synced to its end, and the process's CPU meanwhile.
  double merge_seconds = 0;
  double merge_cpu = 0;
};

double TotalCpu(const SyncRun& run) { return run.cpu_total; }

// One initial sync of pods from `url` into a new cache at `dir`.
StatusOr<SyncRun> Sync(const std::string& url, const std::string& dir, const IngestBenchOptions& o,
                       bool label_index) {
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(dir, CacheOptionsOf(o)));
  InformerFactoryOptions fo;
  fo.informer.reflector.read_ahead_bytes = static_cast<size_t>(o.read_ahead_bytes);
  fo.keyspace.label_index = label_index;
  std::unique_ptr<InformerFactory> factory =
      InformerFactory::Create(RestConfig{.server = url}, cache, fo);
  KCACHE_ASSIGN_OR_RETURN(auto informer, factory->ForResource("pods"));
  (void)informer;
  SyncRun run;
  auto cpu_before = ThreadsCpu();
  const double process_before = ProcessCpu();
  auto start = Clock::now();
  KCACHE_RETURN_IF_ERROR(factory->Start());
  KCACHE_RETURN_IF_ERROR(factory->WaitForCacheSync(std::chrono::hours(1)));
  run.seconds = Seconds(Clock::now() - start);
  run.cpu = CpuByName(cpu_before, ThreadsCpu());
  run.cpu_total = ProcessCpu() - process_before;
  double named = 0;
  for (const auto& [name, s] : run.cpu) named += s;
  // Threads that ended before the reading (a relist's ingester among them).
  if (run.cpu_total > named) run.cpu["(ended threads)"] = run.cpu_total - named;
  KCACHE_RETURN_IF_ERROR(cache->WaitForIndexMerges());
  run.merge_seconds = Seconds(Clock::now() - start) - run.seconds;
  run.merge_cpu = ProcessCpu() - process_before - run.cpu_total;
  factory->Stop();
  KCACHE_ASSIGN_OR_RETURN(KeyspaceStats stats, cache->Stats("pods"));
  run.objects = stats.objects;
  return run;
}

// Raw RocksDB: the objects of the cache at `dir`, under the same keys, in
// WriteBatches of 1,000 into a new database at `raw_dir` with the options of
// the cache's objects column family. Only the writes are timed.
StatusOr<double> RawPuts(const std::string& dir, const IngestBenchOptions& o,
                         const std::string& raw_dir, uint64_t* bytes) {
  const bool label_index = o.label_index;
  const CacheOptions copts = CacheOptionsOf(o);
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(dir, copts));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> pods,
                          cache->OpenKeyspace("pods", {.label_index = label_index}));
  rocksdb::Options ro = storage::ObjectsLikeOptions(copts);
  ro.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  KCACHE_RETURN_IF_ERROR(storage::FromRocks(rocksdb::DB::Open(ro, raw_dir, &raw), "open raw"));
  std::unique_ptr<rocksdb::DB> db(raw);
  double seconds = 0;
  *bytes = 0;
  std::vector<std::pair<std::string, ObjectPtr>> batch;
  auto write = [&]() -> Status {
    auto start = Clock::now();
    rocksdb::WriteBatch wb;
    for (const auto& [key, obj] : batch)
      wb.Put(key, rocksdb::Slice(obj->json().data(), obj->json().size()));
    KCACHE_RETURN_IF_ERROR(storage::FromRocks(db->Write({}, &wb), "raw write"));
    seconds += Seconds(Clock::now() - start);
    batch.clear();
    return Status::OK();
  };
  auto it = pods->NewIterator();
  for (; it->Valid(); it->Next()) {
    *bytes += it->object()->byte_size();
    batch.emplace_back(it->key(), it->object());
    if (batch.size() == 1000) KCACHE_RETURN_IF_ERROR(write());
  }
  KCACHE_RETURN_IF_ERROR(it->status());
  KCACHE_RETURN_IF_ERROR(write());
  return seconds;
}

// The runs' figures, one value per run in each series; the summary prints
// their medians.
struct Series {
  std::vector<double> kcache_s, raw_s, ratios, index_time, index_cpu;
  std::vector<double> busy, ceilings, cpu_per_pod, cache_mb, raw_mb, merge_s, merge_cpu;
  std::map<std::string, std::vector<double>> cpu;
};

// The line of --jsonl for run `r`.
nlohmann::json JsonRow(const IngestBenchOptions& o, int r, const SyncRun& run,
                       const std::optional<SyncRun>& bare, uint64_t bytes, double raw) {
  nlohmann::json row = {{"bench", "ingest"},
                        {"pods", o.pods},
                        {"object_bytes", o.object_bytes},
                        {"label_index", o.label_index},
                        {"read_ahead_bytes", o.read_ahead_bytes},
                        {"fast_first_list", o.fast_first_list},
                        {"run", r},
                        {"objects", run.objects},
                        {"bytes", bytes},
                        {"kcache_s", run.seconds},
                        {"kcache_cpu_s", TotalCpu(run)},
                        {"raw_s", raw},
                        {"merge_s", run.merge_seconds},
                        {"merge_cpu_s", run.merge_cpu}};
  if (bare) row["no_label_index_s"] = bare->seconds;
  return row;
}

void PrintSummary(const Series& s, uint64_t objects, uint64_t bytes, double cores,
                  std::ostream& out) {
  char line[512];
  const double ks = Median(s.kcache_s), rs = Median(s.raw_s);
  std::snprintf(line, sizeof line,
                "  raw RocksDB batched puts of the same bytes: %9.0f pods/s %7.1f MB/s\n",
                objects / rs, bytes / rs / 1e6);
  out << line;
  std::snprintf(
      line, sizeof line,
      "  kcache: list+watch from kcache serve, synced: %7.0f pods/s %7.1f MB/s  ratio %.2f "
      "(median of the runs' ratios)\n",
      objects / ks, bytes / ks / 1e6, Median(s.ratios));
  out << line;
  if (!s.index_time.empty()) {
    std::snprintf(line, sizeof line,
                  "  label index: %.0f%% of the sync's time, %.1f of %.1f CPU us/pod, its merge "
                  "after synced included (medians; the same sync without it, in the same run)\n",
                  100 * Median(s.index_time), 1e6 * Median(s.index_cpu),
                  1e6 * (Median(s.cpu_per_pod) + Median(s.merge_cpu)));
    out << line;
  }
  std::snprintf(line, sizeof line,
                "  CPU bound: %.1f CPU us/pod in all, %.0f%% of %.0f cores busy; all of them busy "
                "for the sync would give a ratio of at most %.2f (medians)\n",
                1e6 * Median(s.cpu_per_pod), 100 * Median(s.busy), cores, Median(s.ceilings));
  out << line;
  std::snprintf(line, sizeof line,
                "  after synced, the label index's merge: %.2f s, %.1f CPU us/pod (medians; in "
                "none of the figures above)\n",
                Median(s.merge_s), 1e6 * Median(s.merge_cpu));
  out << line;
  std::snprintf(line, sizeof line, "  on disk: kcache %.0f MB, raw RocksDB %.0f MB (medians)\n",
                Median(s.cache_mb), Median(s.raw_mb));
  out << line;
  out << "  CPU seconds by thread during the sync (medians; \"kcache\" includes the server's "
         "threads):\n";
  for (const auto& [name, v] : s.cpu) {
    const double m = Median(v);
    if (m < 0.01) continue;
    std::snprintf(line, sizeof line, "    %-18s %6.2f s  (%.1f us/pod)\n", name.c_str(), m,
                  m * 1e6 / std::max<uint64_t>(objects, 1));
    out << line;
  }
}

}  // namespace

Status RunIngestBench(const IngestBenchOptions& o, std::ostream& out) {
  if (o.pods <= 0 || o.runs <= 0 || o.object_bytes < 0 || o.read_ahead_bytes < 0) {
    return Status::InvalidArgument(
        "--pods and --runs must be positive, --object-bytes and --read-ahead-bytes not negative");
  }
  if (o.label_index_cost && !o.label_index) {
    return Status::InvalidArgument("--label-index-cost needs the label index on");
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<tool::ScratchDir> work,
                          tool::ScratchDir::Create("kcache-bench", o.dir));
  serve::ServeOptions so;
  so.listen = "127.0.0.1:0";
  so.cluster.pods = o.pods;
  so.cluster.object_bytes = o.object_bytes;
  so.churn = {0, 0, 0, 0};
  std::ofstream jsonl;
  if (!o.jsonl.empty()) {
    jsonl.open(o.jsonl, std::ios::app);
    if (!jsonl) return Status::IOError("open " + o.jsonl + ": " + std::strerror(errno));
  }
  auto load_start = Clock::now();
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<serve::Server> server, serve::Server::Start(so));
  char line[512];
  std::snprintf(line, sizeof line,
                "ingest: kcache serve with %d pods (loaded in %.1f s), %d runs, read-ahead %zu "
                "bytes, label index %s\n",
                o.pods, Seconds(Clock::now() - load_start), o.runs, o.read_ahead_bytes,
                o.label_index ? "on" : "off");
  out << line;
  // The CPU bound: all threads' CPU (the server's included) over the cores
  // the sync had. A sync that keeps them busy can go faster only by spending
  // less CPU per pod; `ceilings` is the ratio to raw RocksDB it would reach
  // if every core were busy for it all along.
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  Series s;
  uint64_t objects = 0, bytes = 0;
  for (int r = 0; r < o.runs; ++r) {
    const std::string dir = work->path() + "/cache-" + std::to_string(r);
    // With --label-index-cost, the same sync without the label index too;
    // the two take turns going first, so neither always meets a cold start.
    std::optional<SyncRun> bare;
    auto sync_bare = [&]() -> Status {
      KCACHE_ASSIGN_OR_RETURN(bare, Sync(server->url(), dir + "-bare", o, false));
      std::filesystem::remove_all(dir + "-bare");
      return Status::OK();
    };
    if (o.label_index_cost && r % 2 == 1) KCACHE_RETURN_IF_ERROR(sync_bare());
    KCACHE_ASSIGN_OR_RETURN(SyncRun run, Sync(server->url(), dir, o, o.label_index));
    if (o.label_index_cost && !bare) KCACHE_RETURN_IF_ERROR(sync_bare());
    const double cpu_s = TotalCpu(run);
    if (bare) {
      s.index_time.push_back(1 - bare->seconds / run.seconds);
      s.index_cpu.push_back((cpu_s + run.merge_cpu - TotalCpu(*bare)) / run.objects);
    }
    KCACHE_ASSIGN_OR_RETURN(double raw,
                            RawPuts(dir, o, work->path() + "/raw-" + std::to_string(r), &bytes));
    objects = run.objects;
    s.cache_mb.push_back(DiskBytes(dir) / 1e6);
    s.raw_mb.push_back(DiskBytes(work->path() + "/raw-" + std::to_string(r)) / 1e6);
    s.kcache_s.push_back(run.seconds);
    s.raw_s.push_back(raw);
    s.ratios.push_back(raw / run.seconds);
    s.busy.push_back(cpu_s / (run.seconds * cores));
    s.ceilings.push_back(raw / (cpu_s / cores));
    s.cpu_per_pod.push_back(cpu_s / std::max<uint64_t>(run.objects, 1));
    s.merge_s.push_back(run.merge_seconds);
    s.merge_cpu.push_back(run.merge_cpu / std::max<uint64_t>(run.objects, 1));
    for (const auto& [name, sec] : run.cpu) s.cpu[name].push_back(sec);
    std::snprintf(line, sizeof line,
                  "  run %d: kcache sync %.2f s, raw RocksDB puts %.2f s, ratio %.2f; then the "
                  "label index merged in %.2f s\n",
                  r + 1, run.seconds, raw, raw / run.seconds, run.merge_seconds);
    out << line;
    if (bare) {
      std::snprintf(line, sizeof line,
                    "         without the label index %.2f s: the index is %.0f%% of the time\n",
                    bare->seconds, 100 * s.index_time.back());
      out << line;
    }
    if (jsonl.is_open()) {
      jsonl << JsonRow(o, r, run, bare, bytes, raw).dump() << "\n" << std::flush;
      if (!jsonl) return Status::IOError("write " + o.jsonl);
    }
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(work->path() + "/raw-" + std::to_string(r));
  }
  PrintSummary(s, objects, bytes, cores, out);
  return Status::OK();
}

}  // namespace kcache::bench
