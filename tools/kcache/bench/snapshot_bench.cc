// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/bench/snapshot_bench.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "kcache/cache.h"
#include "kcache/lister.h"
#include "kcache/snapshot.h"
#include "tools/kcache/bench/timing.h"
#include "tools/kcache/scratch_dir.h"
#include "tools/kcache/source.h"
#include "tools/kcache/testcluster/pods.h"

namespace kcache::bench {
namespace {

namespace fs = std::filesystem;
// Writes `bytes` of random data to `path` in 1 MiB writes, then fdatasync:
// the disk's sequential write rate, in bytes per second.
StatusOr<double> DiskWriteRate(const std::string& path, uint64_t bytes) {
  std::string chunk(size_t{1} << 20, '\0');
  std::mt19937_64 rng(7);
  for (size_t i = 0; i + 8 <= chunk.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(chunk.data() + i, &v, 8);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Status::IOError("create " + path + ": " + std::strerror(errno));
  auto start = Clock::now();
  for (uint64_t done = 0; done < bytes; done += chunk.size()) {
    if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
      ::close(fd);
      return Status::IOError("write " + path + ": " + std::strerror(errno));
    }
  }
  if (::fdatasync(fd) != 0) {
    ::close(fd);
    return Status::IOError("fdatasync " + path + ": " + std::strerror(errno));
  }
  double secs = Seconds(Clock::now() - start);
  ::close(fd);
  fs::remove(path);
  return static_cast<double>(bytes) / secs;
}

// `s` as one word for sh.
std::string ShellWord(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Mb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f MB", bytes / 1e6);
  return buf;
}

// Step 1. The cache: pods in commits of 1,000, as a sync writes them.
Status LoadCache(const SnapshotBenchOptions& o, const std::string& cache_dir, std::ostream& out) {
  char line[512];
  auto start = Clock::now();
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(cache_dir));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> pods, cache->OpenKeyspace("pods"));
  KCACHE_RETURN_IF_ERROR(cache->SetResourceInfo(
      "pods", ResourceInfo({.version = "v1", .resource = "pods", .kind = "Pod"})));
  serve::synth::PodOptions po{.seed = 3, .namespaces = 10};
  for (int first = 0; first < o.objects; first += 1000) {
    Transaction txn;
    for (int i = first; i < std::min(o.objects, first + 1000); ++i) {
      KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Object::Parse(serve::synth::PodJson(po, i, 1000 + i)));
      txn.Add(std::move(obj));
    }
    KCACHE_RETURN_IF_ERROR(pods->Commit(txn, nullptr));
  }
  std::snprintf(line, sizeof(line), "cache: %d pods loaded in %.1f s\n", o.objects,
                Seconds(Clock::now() - start));
  out << line << std::flush;
  return Status::OK();
}

// Step 2. Export and import to `file`, alternating with the disk's own
// rate so that all three see the same machine.
Status TimeExportImport(const SnapshotBenchOptions& o, const std::string& root,
                        const std::string& cache_dir, const std::string& file, std::ostream& out) {
  char line[512];
  std::vector<double> export_s, import_s, open_s, disk_rate;
  uint64_t raw_bytes = 0, file_bytes = 0;
  for (int run = 0; run < o.runs; ++run) {
    {
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::OpenReadOnly(cache_dir));
      ExportOptions eo;
      eo.zstd_level = o.zstd_level;
      eo.progress = [&](const SnapshotProgress& p) { raw_bytes = p.raw_bytes; };
      auto start = Clock::now();
      KCACHE_RETURN_IF_ERROR(ExportSnapshot(*cache, file, eo).status());
      export_s.push_back(Seconds(Clock::now() - start));
      file_bytes = fs::file_size(file);
    }
    KCACHE_ASSIGN_OR_RETURN(double rate, DiskWriteRate(root + "/disk-rate", raw_bytes));
    disk_rate.push_back(rate);
    {
      const std::string target = root + "/imported";
      auto start = Clock::now();
      KCACHE_RETURN_IF_ERROR(ImportSnapshot(file, target).status());
      import_s.push_back(Seconds(Clock::now() - start));
      fs::remove_all(target);
    }
    {
      // Read in place instead: the verifying pass alone.
      auto start = Clock::now();
      KCACHE_RETURN_IF_ERROR(OpenSnapshot(file).status());
      open_s.push_back(Seconds(Clock::now() - start));
    }
    std::snprintf(line, sizeof(line),
                  "run %d: export %.2f s, import %.2f s, open in place %.2f s, disk %.0f MB/s\n",
                  run + 1, export_s.back(), import_s.back(), open_s.back(), rate / 1e6);
    out << line << std::flush;
  }
  const double disk = Median(disk_rate);
  const double ex = Median(export_s), im = Median(import_s), op = Median(open_s);
  out << "\nsnapshot of " << o.objects << " pods: " << Mb(raw_bytes) << " of rows, file "
      << Mb(file_bytes) << " (zstd level " << o.zstd_level << ")\n";
  std::snprintf(line, sizeof(line), "%-34s %10s %14s %14s %22s\n", "step (median of runs)",
                "seconds", "rows MB/s", "file MB/s", "rows rate / disk write");
  out << line;
  std::snprintf(line, sizeof(line), "%-34s %10s %14.0f %14s %22s\n",
                "disk sequential write (fdatasync)", "-", disk / 1e6, "-", "1.00");
  out << line;
  std::snprintf(line, sizeof(line), "%-34s %10.2f %14.0f %14.0f %22.2f\n", "snapshot export", ex,
                raw_bytes / ex / 1e6, file_bytes / ex / 1e6, raw_bytes / ex / disk);
  out << line;
  std::snprintf(line, sizeof(line), "%-34s %10.2f %14.0f %14.0f %22.2f\n", "snapshot import", im,
                raw_bytes / im / 1e6, file_bytes / im / 1e6, raw_bytes / im / disk);
  out << line;
  std::snprintf(line, sizeof(line), "%-34s %10.2f %14.0f %14.0f %22.2f\n",
                "snapshot open in place (verify)", op, raw_bytes / op / 1e6, file_bytes / op / 1e6,
                raw_bytes / op / disk);
  out << line;

  return Status::OK();
}

// Step 3. From opening the cache to the first result of get, as `kcache
// get` does it: a read-only open, resolving the resource, then one object
// by name, or the first object of a namespace's list.
Status TimeFirstGet(const SnapshotBenchOptions& o, const std::string& cache_dir,
                    const std::string& file, std::ostream& out) {
  char line[512];
  std::vector<double> named, listed, process, from_file;
  // An object from the middle of the cache, as a user would name it.
  std::string ns, name;
  {
    serve::synth::PodOptions po{.seed = 3, .namespaces = 10};
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, Object::Parse(serve::synth::PodJson(
                                               po, static_cast<uint64_t>(o.objects / 2), 1)));
    ns = obj->namespace_();
    name = obj->name();
  }
  // What `kcache get` does before its first read: a read-only open and
  // resolving the resource. The indexer keeps the cache open.
  auto open_pods = [&](const std::string& snapshot = "") -> StatusOr<std::shared_ptr<Indexer>> {
    KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<tool::Source> source,
                            tool::Source::Open(snapshot.empty() ? cache_dir : "", snapshot));
    KCACHE_ASSIGN_OR_RETURN(std::string ks, source->Resolve("po"));
    return source->Keyspace(ks);
  };
  for (int run = 0; run < std::max(o.runs, 5); ++run) {
    {
      auto start = Clock::now();
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> pods, open_pods());
      KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, pods->GetByKey(ns + "/" + name));
      if (!obj) return Status::Internal("bench: " + ns + "/" + name + " is not in the cache");
      named.push_back(Seconds(Clock::now() - start));
    }
    {
      auto start = Clock::now();
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> pods, open_pods());
      bool got = false;
      KCACHE_RETURN_IF_ERROR(
          ListAllByNamespace(*pods, ns, LabelSelector::Everything(), [&](const ObjectPtr&) {
            got = true;
            return false;
          }));
      if (!got) return Status::Internal("bench: " + ns + " is empty");
      listed.push_back(Seconds(Clock::now() - start));
    }
    {
      auto start = Clock::now();
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> pods, open_pods(file));
      KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, pods->GetByKey(ns + "/" + name));
      if (!obj) return Status::Internal("bench: " + ns + "/" + name + " is not in the snapshot");
      from_file.push_back(Seconds(Clock::now() - start));
    }
    {
      // The whole command, process start to exit.
      // This process is the kcache tool (the bench is one of its commands).
      std::string cmd = ShellWord(fs::read_symlink("/proc/self/exe").string()) + " get pods " +
                        name + " -n " + ns + " -o name --cache " + ShellWord(cache_dir) +
                        " > /dev/null";
      auto start = Clock::now();
      if (std::system(cmd.c_str()) != 0) return Status::Internal("bench: " + cmd + " failed");
      process.push_back(Seconds(Clock::now() - start));
    }
  }
  out << "\nfrom opening the cache (" << o.objects
      << " pods) to the first result of get, median of " << named.size() << " runs:\n";
  std::snprintf(line, sizeof(line), "  get pods NAME (open, resolve, read)   %8.1f ms\n",
                Median(named) * 1e3);
  out << line;
  std::snprintf(line, sizeof(line), "  get pods -n NS (first item)           %8.1f ms\n",
                Median(listed) * 1e3);
  out << line;
  std::snprintf(line, sizeof(line), "  kcache get pods NAME, whole process   %8.1f ms\n",
                Median(process) * 1e3);
  out << line;
  std::snprintf(line, sizeof(line), "  get pods NAME --snapshot (in place)   %8.1f ms\n",
                Median(from_file) * 1e3);
  out << line;
  return Status::OK();
}

}  // namespace

Status RunSnapshotBench(const SnapshotBenchOptions& o, std::ostream& out) {
  if (o.objects <= 0 || o.runs <= 0)
    return Status::InvalidArgument("--objects and --runs must be positive");
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<tool::ScratchDir> work,
                          tool::ScratchDir::Create("kcache-bench", o.dir));
  const std::string root = work->path();
  const std::string cache_dir = root + "/cache";
  const std::string file = root + "/cache.kcs";
  KCACHE_RETURN_IF_ERROR(LoadCache(o, cache_dir, out));
  KCACHE_RETURN_IF_ERROR(TimeExportImport(o, root, cache_dir, file, out));
  return TimeFirstGet(o, cache_dir, file, out);
}

}  // namespace kcache::bench
