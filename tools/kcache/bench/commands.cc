// SPDX-License-Identifier: Apache-2.0

// `kcache demo` and `kcache bench NAME`: one row per benchmark, each its
// options' flags and its run.

#include <iostream>

#include "tools/kcache/bench/decode_bench.h"
#include "tools/kcache/bench/demo.h"
#include "tools/kcache/bench/get_bench.h"
#include "tools/kcache/bench/ingest_bench.h"
#include "tools/kcache/bench/serve_bench.h"
#include "tools/kcache/bench/snapshot_bench.h"
#include "tools/kcache/bench/store_bench.h"
#include "tools/kcache/command.h"

namespace kcache::tool {
namespace {

using cli::FlagSet;

constexpr char kDirHelp[] = "directory for the work (default: a new one under /tmp, removed after)";

// A benchmark's run: its options' defaults, the flags `define` adds over
// them, then `run`.
template <typename Options>
int RunBench(const Command& self, const std::vector<std::string>& args,
             void (*define)(FlagSet&, Options*), Status (*run)(const Options&, std::ostream&)) {
  Options o;
  FlagSet flags;
  define(flags, &o);
  if (int rc = ParseFlagsOnly(self, flags, args); rc >= 0) return rc;
  Status st = run(o, std::cout);
  return st.ok() ? 0 : Fail(st, self.name);
}

int Demo(const Command& self, const std::vector<std::string>& args) {
  return RunBench<bench::demo::DemoOptions>(
      self, args,
      [](FlagSet& f, bench::demo::DemoOptions* o) {
        f.Int("pods", '\0', &o->pods, "pods in the synthetic cluster");
        f.Int("namespaces", '\0', &o->namespaces, "namespaces they are spread over");
      },
      bench::demo::RunDemo);
}

int Decode(const Command& self, const std::vector<std::string>& args) {
  return RunBench<bench::DecodeBenchOptions>(
      self, args,
      [](FlagSet& f, bench::DecodeBenchOptions* o) {
        f.Int("objects", '\0', &o->objects, "distinct pods decoded per run");
        f.Int("runs", '\0', &o->runs, "timed runs per method (the median is reported)");
      },
      bench::RunDecodeBench);
}

int Get(const Command& self, const std::vector<std::string>& args) {
  return RunBench<bench::GetBenchOptions>(
      self, args,
      [](FlagSet& f, bench::GetBenchOptions* o) {
        f.IntSlice("objects", '\0', &o->sizes, "cache sizes in pods, ascending");
        f.Int("runs", '\0', &o->runs, "runs of each form at each size (medians are reported)");
        f.String("dir", '\0', &o->dir, kDirHelp);
      },
      bench::RunGetBench);
}

int Ingest(const Command& self, const std::vector<std::string>& args) {
  return RunBench<bench::IngestBenchOptions>(
      self, args,
      [](FlagSet& f, bench::IngestBenchOptions* o) {
        f.Bool("label-index", '\0', &o->label_index, "maintain the label index");
        f.Bool("label-index-cost", '\0', &o->label_index_cost,
               "also sync without the label index in each run, and report its share");
        f.String("jsonl", '\0', &o->jsonl, "append each run to this file as a JSON line");
        f.Int("pods", '\0', &o->pods, "pods in the served cluster");
        f.Int("object-bytes", '\0', &o->object_bytes,
              "pad each pod to this many bytes (0: natural)");
        f.Int("runs", '\0', &o->runs, "timed runs of each side (medians are reported)");
        f.Int("read-ahead-bytes", '\0', &o->read_ahead_bytes,
              "bytes of decoded objects the reflector reads ahead of its commits (0: one "
              "thread)");
        f.Int("zstd-dict-bytes", '\0', &o->zstd_dictionary_bytes,
              "zstd dictionary size for objects on both sides (0: none; -1: the default)");
        f.Bool("fast-first-list", '\0', &o->fast_first_list,
               "compress the first list's objects with LZ4 (CacheOptions::fast_first_list)");
        f.String("dir", '\0', &o->dir, kDirHelp);
      },
      bench::RunIngestBench);
}

int Serve(const Command& self, const std::vector<std::string>& args) {
  return RunBench<bench::ServeBenchOptions>(
      self, args,
      [](FlagSet& f, bench::ServeBenchOptions* o) {
        f.Int("pods", '\0', &o->pods, "pods in the served cluster");
        f.Int("events", '\0', &o->events, "watch events in the burst");
        f.Int("runs", '\0', &o->runs, "timed runs of each (the median is reported)");
        f.String("http-peer", '\0', &o->http_peer,
                 "HOST:PORT of an HTTP server answering GET /?bytes=N (tools/bench/http-bench)");
      },
      bench::RunServeBench);
}

int Snapshot(const Command& self, const std::vector<std::string>& args) {
  return RunBench<bench::SnapshotBenchOptions>(
      self, args,
      [](FlagSet& f, bench::SnapshotBenchOptions* o) {
        f.Int("objects", '\0', &o->objects, "pods in the cache");
        f.Int("runs", '\0', &o->runs, "timed runs of each step (medians are reported)");
        f.Int("zstd-level", '\0', &o->zstd_level, "zstd level of the exported file");
        f.String("dir", '\0', &o->dir, kDirHelp);
      },
      bench::RunSnapshotBench);
}

int Store(const Command& self, const std::vector<std::string>& args) {
  return RunBench<bench::StoreBenchOptions>(
      self, args,
      [](FlagSet& f, bench::StoreBenchOptions* o) {
        f.Int("objects", '\0', &o->objects, "pods loaded");
        f.Bool("label-index", '\0', &o->label_index, "maintain the label index");
        f.Int("batch", '\0', &o->batch, "objects per commit");
        f.Int("runs", '\0', &o->runs, "timed runs per query (the median is reported)");
        f.Int("zstd-dict-bytes", '\0', &o->zstd_dictionary_bytes,
              "zstd dictionary size for objects (0: none)");
        f.Bool("fast-first-list", '\0', &o->fast_first_list,
               "compress the first list's objects with LZ4 (CacheOptions::fast_first_list)");
        f.String("dir", '\0', &o->dir, kDirHelp);
      },
      bench::RunStoreBench);
}

// `kcache bench` alone, or with a name no row has.
int Group(const Command& self, const std::vector<std::string>& args) {
  if (GroupHelp(self, args)) return 0;
  std::string names;
  for (const Command& c : kBenchCommands) {
    names += (names.empty() ? "" : ", ") + std::string(c.name).substr(6);
  }
  return Fail(
      Status::InvalidArgument(args.empty() ? "missing benchmark name (available: " + names + ")"
                                           : "unknown benchmark \"" + args[0] +
                                                 "\" (available: " + names + ")"),
      "bench");
}

}  // namespace

const Command kDemoCommand = {
    "demo",
    "demo [--pods N] [--namespaces N]",
    "decode, index and query a built-in synthetic cluster",
    "Decodes, indexes and queries a built-in synthetic cluster in a temporary cache, then "
    "relists it, and prints what each step cost. Needs no cluster.",
    "  # The default: 20,000 pods over 10 namespaces\n"
    "  kcache demo\n"
    "  # A larger run\n"
    "  kcache demo --pods 200000 --namespaces 50\n",
    Demo};

const Command kBenchCommand = {
    "bench",
    "bench (decode | get | ingest | serve | snapshot | store) [flags]",
    "benchmarks, each against a peer or a physical limit",
    "Benchmarks, each against a peer or a physical limit measured in the same run; "
    "docs/benchmarks.md has their figures.",
    "  kcache bench store --objects 100000\n"
    "  kcache bench get --objects 10000,100000,1000000\n",
    Group};

const std::vector<Command> kBenchCommands = {
    {"bench decode", "bench decode [--objects N] [--runs N]",
     "metadata extraction against a full JSON parse",
     "Metadata extraction against a full JSON parse of the same pods.",
     "  kcache bench decode --objects 20000\n", Decode},
    {"bench get", "bench get [--objects N,N,...] [--runs N] [--dir DIR]",
     "kcache get's time and peak memory over caches of 10k to 1M pods",
     "kcache get's time and peak memory over one cache grown through the given sizes, each "
     "form in its own process.",
     "  kcache bench get --objects 10000,100000,1000000 --runs 3\n", Get},
    {"bench ingest",
     "bench ingest [--pods N] [--object-bytes N] [--runs N] [--read-ahead-bytes N] [--dir DIR]\n"
     "                    [--label-index-cost] [--jsonl FILE]",
     "an informer's sync from kcache serve against raw RocksDB puts",
     "An informer's initial sync from kcache serve into a cache against raw RocksDB batched "
     "puts of the same bytes, with the CPU of each thread.",
     "  kcache bench ingest --pods 100000 --runs 3\n", Ingest},
    {"bench serve", "bench serve [--pods N] [--events N] [--runs N]",
     "kcache serve's LIST and watch rates against the loopback limit",
     "kcache serve's LIST and watch rates against the loopback limit.",
     "  kcache bench serve --pods 50000\n", Serve},
    {"bench snapshot", "bench snapshot [--objects N] [--runs N] [--zstd-level N]",
     "snapshot export/import against the disk's write rate; open to first get",
     "Snapshot export and import against the disk's write rate; open to first get.",
     "  kcache bench snapshot --objects 1000000\n", Snapshot},
    {"bench store", "bench store [--objects N] [--batch N] [--runs N]",
     "ingest and queries of the RocksDB cache against raw RocksDB",
     "Ingest and queries of the RocksDB cache against raw RocksDB batched puts.",
     "  kcache bench store --objects 100000\n", Store},
};

}  // namespace kcache::tool
