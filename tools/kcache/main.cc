// kcache: the command-line tool. main() only parses flags; every command is
// a library function.

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench/decode_bench.h"
#include "bench/demo.h"
#include "bench/get_bench.h"
#include "bench/ingest_bench.h"
#include "bench/serve_bench.h"
#include "bench/snapshot_bench.h"
#include "bench/store_bench.h"
#include "serve/server.h"
#include "tools/kcache/flags.h"
#include "tools/kcache/get.h"
#include "tools/kcache/help.h"
#include "tools/kcache/inspect.h"
#include "tools/kcache/serve_cache.h"
#include "tools/kcache/snapshot.h"
#include "tools/kcache/sync.h"
#include "util/strings.h"

#include <unistd.h>

namespace {

constexpr char kUsage[] = R"(kcache: a persistent, indexed cache of Kubernetes objects

Usage:
  kcache demo [flags]          decode, index and query a built-in synthetic cluster
  kcache bench decode [flags]  metadata extraction against a full JSON parse
  kcache bench store [flags]   ingest and queries of the RocksDB cache against raw RocksDB
  kcache bench ingest [flags]  an informer's sync from kcache serve against raw RocksDB puts
  kcache bench serve [flags]   kcache serve's LIST and watch rates against the loopback limit
  kcache bench get [flags]     kcache get's time and peak memory over caches of 10k to 1M pods
  kcache bench snapshot [flags]
                               snapshot export/import against the disk's write rate; open to first get
  kcache serve (--cache DIR | --snapshot FILE) [flags]
                               a read-only Kubernetes API over a cache or a snapshot file
  kcache serve [flags]         a list/watch server with a synthetic cluster, churn and faults
  kcache sync RESOURCE... --cache DIR [flags]
                               mirror resources of a cluster into a cache and keep it current
  kcache get TYPE [NAME...] (--cache DIR | --snapshot FILE) [flags]
                               objects from a cache (also while sync runs) or a snapshot, as kubectl get
  kcache stats (--cache DIR | --snapshot FILE)
                               objects, bytes, resume points and last sync per resource and namespace
  kcache tree RESOURCE NAME (--cache DIR | --snapshot FILE) [-n NS]
                               an object's owners and dependents (ownerReferences)
  kcache diff FROM TO          added, removed and changed objects between caches or snapshots
  kcache snapshot create --cache DIR OUTDIR
                               a consistent copy of a cache as a directory (also while sync runs)
  kcache snapshot export --cache DIR FILE
                               a consistent copy of a cache as one portable, checksummed file
  kcache snapshot import FILE --cache DIR
                               a new cache from a snapshot file; sync resumes from it
  kcache snapshot verify FILE  check a snapshot file's checksums, manifest and indexes
  kcache version               print the version

Run "kcache help COMMAND" (or "kcache COMMAND --help") for a command's arguments,
examples and flags.
)";

int Fail(const kcache::Status& st, const std::string& command) {
  std::cerr << "error: " << (command.empty() ? "" : command + ": ") << st.message() << "\n";
  return st.IsInvalidArgument() ? 2 : 1;
}

// Parses `args` with `flags`, handling --help. Returns -1 to go on, else an
// exit code.
int ParseFlags(kcache::cli::FlagSet& flags, const std::vector<std::string>& args,
               const std::string& command, std::vector<std::string>* positional) {
  bool help = false;
  flags.Bool("help", 'h', &help, "show this help");
  kcache::Status st = flags.Parse(args, positional);
  if (!st.ok()) {
    if (command == "get") {
      // kubectl's wording and exit code.
      std::cerr << "error: " << st.message() << "\nSee 'kcache get --help' for usage.\n";
      return 1;
    }
    std::cerr << "error: " << command << ": " << st.message() << "\n\nFlags:\n" << flags.Usage();
    return 2;
  }
  if (help) {
    if (const kcache::tool::CommandHelp* h = kcache::tool::FindHelp(command)) {
      std::cout << kcache::tool::HelpText(*h) << "\nFlags:\n" << flags.Usage();
    } else {
      std::cout << "Usage: kcache " << command << " [flags]\n\nFlags:\n" << flags.Usage();
    }
    return 0;
  }
  return -1;
}

int Demo(const std::vector<std::string>& args) {
  int64_t pods = 20000, namespaces = 10;
  kcache::cli::FlagSet flags;
  flags.Int("pods", '\0', &pods, "pods in the synthetic cluster");
  flags.Int("namespaces", '\0', &namespaces, "namespaces they are spread over");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "demo", &positional); rc >= 0) return rc;
  if (!positional.empty())
    return Fail(kcache::Status::InvalidArgument("unexpected argument \"" + positional[0] + "\""),
                "demo");
  kcache::Status st = kcache::demo::RunDemo(
      {.pods = static_cast<int>(pods), .namespaces = static_cast<int>(namespaces)}, std::cout);
  return st.ok() ? 0 : Fail(st, "demo");
}

int BenchStore(const std::vector<std::string>& args) {
  int64_t objects = 100000, batch = 1000, runs = 5, dict = 0;
  std::string dir;
  bool label_index = true;
  kcache::cli::FlagSet flags;
  flags.Int("objects", '\0', &objects, "pods loaded");
  flags.Bool("label-index", '\0', &label_index, "maintain the label index");
  flags.Int("batch", '\0', &batch, "objects per commit");
  flags.Int("runs", '\0', &runs, "timed runs per query (the median is reported)");
  flags.Int("zstd-dict-bytes", '\0', &dict, "zstd dictionary size for objects (0: none)");
  flags.String("dir", '\0', &dir,
               "directory for the databases (default: a new one under /tmp, removed after)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "bench store", &positional); rc >= 0) return rc;
  kcache::Status st = kcache::bench::RunStoreBench({.objects = static_cast<int>(objects),
                                                    .batch = static_cast<int>(batch),
                                                    .runs = static_cast<int>(runs),
                                                    .zstd_dictionary_bytes = static_cast<int>(dict),
                                                    .label_index = label_index,
                                                    .dir = dir},
                                                   std::cout);
  return st.ok() ? 0 : Fail(st, "bench store");
}

int BenchIngest(const std::vector<std::string>& args) {
  int64_t pods = 100000, object_bytes = 0, runs = 3, read_ahead = int64_t{8} << 20;
  bool label_index = true, label_index_cost = false;
  std::string dir, jsonl;
  kcache::cli::FlagSet flags;
  flags.Bool("label-index", '\0', &label_index, "maintain the label index");
  flags.Bool("label-index-cost", '\0', &label_index_cost,
             "also sync without the label index in each run, and report its share");
  flags.String("jsonl", '\0', &jsonl, "append each run to this file as a JSON line");
  flags.Int("pods", '\0', &pods, "pods in the served cluster");
  flags.Int("object-bytes", '\0', &object_bytes, "pad each pod to this many bytes (0: natural)");
  flags.Int("runs", '\0', &runs, "timed runs of each side (medians are reported)");
  flags.Int("read-ahead-bytes", '\0', &read_ahead,
            "bytes of decoded objects the reflector reads ahead of its commits (0: one thread)");
  flags.String("dir", '\0', &dir,
               "directory for the databases (default: a new one under /tmp, removed after)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "bench ingest", &positional); rc >= 0) return rc;
  if (pods <= 0 || runs <= 0 || object_bytes < 0 || read_ahead < 0) {
    return Fail(kcache::Status::InvalidArgument(
                    "--pods and --runs must be positive, --object-bytes and --read-ahead-bytes "
                    "not negative"),
                "bench ingest");
  }
  kcache::Status st =
      kcache::bench::RunIngestBench({.pods = static_cast<int>(pods),
                                     .object_bytes = static_cast<int>(object_bytes),
                                     .runs = static_cast<int>(runs),
                                     .read_ahead_bytes = static_cast<size_t>(read_ahead),
                                     .label_index = label_index,
                                     .label_index_cost = label_index_cost,
                                     .dir = dir,
                                     .jsonl = jsonl},
                                    std::cout);
  return st.ok() ? 0 : Fail(st, "bench ingest");
}

int BenchServe(const std::vector<std::string>& args) {
  int64_t pods = 50000, events = 50000, runs = 5;
  kcache::cli::FlagSet flags;
  flags.Int("pods", '\0', &pods, "pods in the served cluster");
  flags.Int("events", '\0', &events, "watch events in the burst");
  flags.Int("runs", '\0', &runs, "timed runs of each (the median is reported)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "bench serve", &positional); rc >= 0) return rc;
  kcache::Status st = kcache::bench::RunServeBench({.pods = static_cast<int>(pods),
                                                    .events = static_cast<int>(events),
                                                    .runs = static_cast<int>(runs)},
                                                   std::cout);
  return st.ok() ? 0 : Fail(st, "bench serve");
}

int BenchSnapshot(const std::vector<std::string>& args) {
  int64_t objects = 1000000, runs = 3, level = 1;
  std::string dir;
  kcache::cli::FlagSet flags;
  flags.Int("objects", '\0', &objects, "pods in the cache");
  flags.Int("runs", '\0', &runs, "timed runs of each step (medians are reported)");
  flags.Int("zstd-level", '\0', &level, "zstd level of the exported file");
  flags.String("dir", '\0', &dir,
               "directory for the cache and files (default: a new one under /tmp, removed after)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "bench snapshot", &positional); rc >= 0) return rc;
  kcache::Status st = kcache::bench::RunSnapshotBench({.objects = static_cast<int>(objects),
                                                       .runs = static_cast<int>(runs),
                                                       .zstd_level = static_cast<int>(level),
                                                       .dir = dir},
                                                      std::cout);
  return st.ok() ? 0 : Fail(st, "bench snapshot");
}

int BenchGet(const std::vector<std::string>& args) {
  kcache::bench::GetBenchOptions o;
  std::vector<std::string> sizes;
  int64_t runs = o.runs;
  kcache::cli::FlagSet flags;
  flags.StringSlice("objects", '\0', &sizes,
                    "cache sizes in pods, ascending (default 10000,100000,1000000)");
  flags.Int("runs", '\0', &runs, "runs of each form at each size (medians are reported)");
  flags.String("dir", '\0', &o.dir,
               "directory for the cache (default: a new one under /tmp, removed after)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "bench get", &positional); rc >= 0) return rc;
  if (!sizes.empty()) {
    o.sizes.clear();
    for (const std::string& s : sizes) {
      char* end = nullptr;
      long v = std::strtol(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || v <= 0) {
        return Fail(kcache::Status::InvalidArgument("invalid argument \"" + s +
                                                    "\" for \"--objects\" flag: not a positive "
                                                    "integer"),
                    "bench get");
      }
      o.sizes.push_back(static_cast<int>(v));
    }
  }
  o.runs = static_cast<int>(runs);
  kcache::Status st = kcache::bench::RunGetBench(o, std::cout);
  return st.ok() ? 0 : Fail(st, "bench get");
}

// `kcache GROUP --help` for commands with sub-commands.
bool GroupHelp(const std::string& group, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "--help" && args[0] != "-h")) return false;
  std::cout << kcache::tool::HelpText(*kcache::tool::FindHelp(group)) << "\nRun \"kcache help "
            << group << " COMMAND\" for a command's flags.\n";
  return true;
}

int Bench(const std::vector<std::string>& args) {
  if (GroupHelp("bench", args)) return 0;
  if (!args.empty() && args[0] == "get") return BenchGet({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "store") return BenchStore({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "snapshot") return BenchSnapshot({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "serve") return BenchServe({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "ingest") return BenchIngest({args.begin() + 1, args.end()});
  if (args.empty() || args[0] != "decode") {
    return Fail(
        kcache::Status::InvalidArgument(
            args.empty()
                ? "missing benchmark name (available: decode, get, ingest, serve, snapshot, store)"
                : "unknown benchmark \"" + args[0] +
                      "\" (available: decode, get, ingest, serve, snapshot, store)"),
        "bench");
  }
  int64_t objects = 20000, runs = 5;
  kcache::cli::FlagSet flags;
  flags.Int("objects", '\0', &objects, "distinct pods decoded per run");
  flags.Int("runs", '\0', &runs, "timed runs per method (the median is reported)");
  std::vector<std::string> positional;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (int rc = ParseFlags(flags, rest, "bench decode", &positional); rc >= 0) return rc;
  kcache::Status st = kcache::bench::RunDecodeBench(
      {.objects = static_cast<int>(objects), .runs = static_cast<int>(runs)}, std::cout);
  return st.ok() ? 0 : Fail(st, "bench decode");
}

int Serve(const std::vector<std::string>& args) {
  kcache::serve::ServeOptions o;
  int64_t seed = 1, bookmark_seconds = 60;
  std::string cut, expire, throttle, error, malformed, stall;
  kcache::cli::FlagSet flags;
  flags.String("listen", '\0', &o.listen,
               "HOST:PORT to serve on (port 0: any free one), or unix:PATH");
  flags.Int("pods", '\0', &o.cluster.pods, "pods in the synthetic cluster");
  flags.Int("namespaces", '\0', &o.cluster.namespaces, "namespaces the pods are spread over");
  flags.Int("nodes", '\0', &o.cluster.nodes, "nodes the pods run on");
  flags.Int("object-bytes", '\0', &o.cluster.object_bytes,
            "pad each pod to this many bytes (0: natural, about 6.5 KB)");
  flags.Int("seed", '\0', &seed, "seed of the synthetic cluster and its churn");
  flags.Int("creates", '\0', &o.churn.creates, "pods created per second");
  flags.Int("updates", '\0', &o.churn.updates, "pod status updates per second");
  flags.Int("relabels", '\0', &o.churn.relabels, "pod label changes per second");
  flags.Int("deletes", '\0', &o.churn.deletes, "pods deleted per second");
  flags.Int(
      "history", '\0', &o.history,
      "events per resource in the watch window (the watch cache): a watch from before them gets "
      "410 Expired");
  flags.Int("list-history", '\0', &o.list_history,
            "events per resource whose versions stay listable exactly (etcd's, until a "
            "compaction): exact lists and continue tokens from before them get 410 (0: twice "
            "--history)");
  flags.Int("bookmark-interval", '\0', &bookmark_seconds,
            "seconds between bookmarks on a watch that allows them");
  flags.String("fault-cut", '\0', &cut, "requests cut mid-way, e.g. 3,7 or *5 (every fifth)");
  flags.String("fault-expire", '\0', &expire, "requests answered 410 Expired");
  flags.String("fault-throttle", '\0', &throttle, "requests answered 429 with Retry-After");
  flags.Int("retry-after", '\0', &o.api.faults.retry_after_seconds,
            "Retry-After seconds of --fault-throttle");
  flags.String("fault-error", '\0', &error, "requests answered 500 InternalError");
  flags.String("fault-malformed", '\0', &malformed, "requests whose body has malformed JSON");
  flags.String("fault-stall", '\0', &stall,
               "requests that stall after the headers (and a watch's initial events)");
  flags.Int("fault-slow", '\0', &o.api.faults.slow_bytes_per_second,
            "send every response at most this many bytes per second (0: no limit)");
  std::string cache_dir, snapshot, token_file, tls_cert, tls_key;
  bool serve_secrets = false;
  flags.String("cache", '\0', &cache_dir,
               "serve this cache read-only (as a sync writes it) instead of a synthetic cluster");
  flags.String("snapshot", '\0', &snapshot,
               "serve this snapshot file read-only, in place (instead of --cache)");
  flags.Bool("serve-secrets", '\0', &serve_secrets,
             "with --cache or --snapshot: serve secrets too");
  flags.String("token-file", '\0', &token_file,
               "with --cache or --snapshot: require a bearer token from this file (one per line)");
  flags.String("tls-cert-file", '\0', &tls_cert,
               "with --cache or --snapshot: serve HTTPS with this certificate chain (PEM)");
  flags.String("tls-private-key-file", '\0', &tls_key,
               "with --cache or --snapshot: the private key of --tls-cert-file (PEM)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "serve", &positional); rc >= 0) return rc;
  if (!positional.empty())
    return Fail(kcache::Status::InvalidArgument("unexpected argument \"" + positional[0] + "\""),
                "serve");
  if (bookmark_seconds < 1)
    return Fail(kcache::Status::InvalidArgument("--bookmark-interval must be at least 1"), "serve");
  if (!cache_dir.empty() || !snapshot.empty()) {
    for (const char* synthetic :
         {"pods", "namespaces", "nodes", "object-bytes", "seed", "creates", "updates", "relabels",
          "deletes", "history", "list-history", "fault-cut", "fault-expire", "fault-throttle",
          "retry-after", "fault-error", "fault-malformed", "fault-stall", "fault-slow"}) {
      if (flags.Changed(synthetic)) {
        return Fail(kcache::Status::InvalidArgument("--" + std::string(synthetic) +
                                                    " applies to the synthetic cluster, not to " +
                                                    (snapshot.empty() ? "--cache" : "--snapshot")),
                    "serve");
      }
    }
    kcache::tool::CacheServeOptions co;
    if (flags.Changed("listen")) co.listen = o.listen;
    co.serve_secrets = serve_secrets;
    co.token_file = token_file;
    co.tls_cert_file = tls_cert;
    co.tls_key_file = tls_key;
    co.bookmark_interval = std::chrono::seconds(bookmark_seconds);
    kcache::Status st = kcache::tool::RunServeCache(cache_dir, snapshot, co, std::cout);
    return st.ok() ? 0 : Fail(st, "serve");
  }
  for (const char* cache_only :
       {"serve-secrets", "token-file", "tls-cert-file", "tls-private-key-file"}) {
    if (flags.Changed(cache_only)) {
      return Fail(kcache::Status::InvalidArgument("--" + std::string(cache_only) +
                                                  " applies to --cache and --snapshot only"),
                  "serve");
    }
  }
  o.cluster.seed = static_cast<uint64_t>(seed);
  o.api.bookmark_interval = std::chrono::seconds(bookmark_seconds);
  struct {
    const char* flag;
    const std::string* spec;
    kcache::serve::RequestSet* set;
  } sets[] = {{"fault-cut", &cut, &o.api.faults.cut},
              {"fault-expire", &expire, &o.api.faults.expire},
              {"fault-throttle", &throttle, &o.api.faults.throttle},
              {"fault-error", &error, &o.api.faults.internal_error},
              {"fault-malformed", &malformed, &o.api.faults.malformed},
              {"fault-stall", &stall, &o.api.faults.stall}};
  for (auto& s : sets) {
    kcache::StatusOr<kcache::serve::RequestSet> parsed =
        kcache::serve::RequestSet::Parse(s.flag, *s.spec);
    if (!parsed.ok()) return Fail(parsed.status(), "serve");
    *s.set = std::move(parsed).value();
  }
  kcache::Status st = kcache::serve::RunServe(o, std::cout);
  return st.ok() ? 0 : Fail(st, "serve");
}

kcache::StatusOr<std::chrono::milliseconds> ParseTimeout(const std::string& s);

int Sync(const std::vector<std::string>& args) {
  kcache::tool::SyncOptions o;
  std::string ns;
  std::string request_timeout = "60s";
  kcache::cli::FlagSet flags;
  flags.String("cache", '\0', &o.cache_dir, "the cache directory (created if missing)");
  flags.String("kubeconfig", '\0', &o.kubeconfig.path, "path to the kubeconfig file");
  flags.String("context", '\0', &o.kubeconfig.context, "the kubeconfig context to use");
  flags.String("server", '\0', &o.kubeconfig.server, "the address of the API server");
  flags.String("namespace", 'n', &ns, "sync this namespace only (default: all namespaces)");
  flags.String("selector", 'l', &o.label_selector, "label selector sent with every list and watch");
  flags.String("field-selector", '\0', &o.field_selector,
               "field selector sent with every list and watch");
  int64_t journal_events = static_cast<int64_t>(o.journal.max_events);
  int64_t journal_mib = static_cast<int64_t>(o.journal.max_bytes >> 20);
  int64_t journal_minutes = o.journal.max_age.count() / 60000;
  flags.Int("journal-max-events", '\0', &journal_events,
            "changes kept per resource for get -w and readers (0: no journal)");
  flags.Int("journal-max-mib", '\0', &journal_mib, "MiB of changes kept per resource");
  flags.Int("journal-max-minutes", '\0', &journal_minutes,
            "minutes a change is kept in the journal");
  flags.Bool("drop-managed-fields", '\0', &o.drop_managed_fields,
             "store objects without metadata.managedFields");
  flags.Bool("until-synced", '\0', &o.until_synced, "exit once every resource has synced");
  flags.Bool("disable-compression", '\0', &o.disable_compression,
             "do not ask the server to compress list responses");
  flags.String("metrics-listen", '\0', &o.metrics_listen,
               "serve Prometheus metrics at http://HOST:PORT/metrics (port 0: any free one)");
  flags.String("log-format", '\0', &o.log_format,
               "text (HH:MM:SS.mmm message) or json (one {\"time\", \"msg\"} object per line)");
  flags.String("request-timeout", '\0', &request_timeout,
               "the longest a list or other request may take before it is retried (watches "
               "end at their timeoutSeconds), e.g. 30s; 0: no limit");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "sync", &positional); rc >= 0) return rc;
  kcache::StatusOr<std::chrono::milliseconds> timeout = ParseTimeout(request_timeout);
  if (!timeout.ok()) return Fail(timeout.status(), "sync");
  o.request_timeout = *timeout;
  if (journal_events < 0 || journal_mib < 0 || journal_minutes < 0) {
    return Fail(kcache::Status::InvalidArgument("--journal-max-* must not be negative"), "sync");
  }
  o.journal.max_events = static_cast<size_t>(journal_events);
  o.journal.max_bytes = static_cast<size_t>(journal_mib) << 20;
  o.journal.max_age = std::chrono::minutes(journal_minutes);
  // "deploy,cm" names two resources, as in kubectl.
  for (const std::string& arg : positional) {
    for (std::string_view name : kcache::Split(arg, ',')) {
      if (name.empty()) {
        return Fail(
            kcache::Status::InvalidArgument("resource list \"" + arg + "\" has an empty name"),
            "sync");
      }
      o.resources.emplace_back(name);
    }
  }
  if (!ns.empty()) {
    o.kubeconfig.namespace_ = ns;
    o.all_namespaces = false;
  }
  if (o.log_format != "text" && o.log_format != "json") {
    return Fail(kcache::Status::InvalidArgument("--log-format must be text or json, not \"" +
                                                o.log_format + "\""),
                "sync");
  }
  // Structured logs are for machines: no progress line among them.
  o.progress = isatty(STDERR_FILENO) && o.log_format == "text";
  kcache::Status st = kcache::tool::RunSync(o, std::cerr, std::cerr);
  if (o.progress) std::cerr << "\n";
  return st.ok() ? 0 : Fail(st, "sync");
}

// A Go duration as kubectl's --request-timeout takes it: "0", "30" (seconds),
// "500ms", "1m30s".
kcache::StatusOr<std::chrono::milliseconds> ParseTimeout(const std::string& s) {
  auto bad = [&] {
    return kcache::Status::InvalidArgument(
        "invalid argument \"" + s +
        "\" for \"--request-timeout\": want a duration such as 30s, 500ms or 1m30s");
  };
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) {
    return std::chrono::milliseconds(std::stoll(s) * 1000);
  }
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"ms", 1}, {"us", 1e-3}, {"ns", 1e-6}, {"h", 3600e3}, {"m", 60e3}, {"s", 1e3}};
  double total = 0;
  size_t i = 0;
  if (s.empty()) return bad();
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == start) return bad();
    double v = std::stod(s.substr(start, i - start));
    bool matched = false;
    for (const auto& [unit, ms] : kUnits) {
      if (s.compare(i, unit.size(), unit) == 0) {
        total += v * ms;
        i += unit.size();
        matched = true;
        break;
      }
    }
    if (!matched) return bad();
  }
  return std::chrono::milliseconds(static_cast<int64_t>(total));
}

int Get(const std::vector<std::string>& args) {
  kcache::tool::GetOptions o;
  std::string request_timeout = "0";
  kcache::cli::FlagSet flags;
  flags.String("cache", '\0', &o.cache_dir, "the cache directory to read");
  flags.String("snapshot", '\0', &o.snapshot, "the snapshot file to read (instead of --cache)");
  flags.String("namespace", 'n', &o.namespace_, "the namespace to list");
  flags.Bool("all-namespaces", 'A', &o.all_namespaces, "list every namespace");
  flags.String("selector", 'l', &o.label_selector, "label selector, e.g. app=web");
  flags.String("field-selector", '\0', &o.field_selector,
               "field selector, e.g. spec.nodeName=node-1");
  flags.String("index", '\0', &o.index, "objects whose index INDEX has VALUE: INDEX=VALUE");
  flags.String("output", 'o', &o.output,
               "json, yaml, name, wide, jsonpath=..., jsonpath-file=..., jsonpath-as-json=..., "
               "custom-columns=..., custom-columns-file=... (default: a table)");
  flags.String("template", '\0', &o.template_, "the template of -o jsonpath");
  flags.String("sort-by", '\0', &o.sort_by,
               "sort by a field, as a JSONPath: {.metadata.creationTimestamp}");
  flags.Bool("no-headers", '\0', &o.no_headers, "print tables without their header");
  flags.Bool("show-labels", '\0', &o.show_labels, "add a LABELS column");
  flags.StringSlice("label-columns", 'L', &o.label_columns,
                    "a column for each of these label keys (repeatable, or comma-separated)");
  flags.Bool("show-managed-fields", '\0', &o.show_managed_fields,
             "keep metadata.managedFields in -o json and -o yaml");
  flags.Bool("watch", 'w', &o.watch,
             "after printing the objects, print each change as a sync writes it to the cache");
  flags.Bool("watch-only", '\0', &o.watch_only,
             "print each change as a sync writes it, without the objects first");
  flags.Bool("output-watch-events", '\0', &o.output_watch_events,
             "print watch events: an EVENT column, or {\"type\", \"object\"} (existing objects "
             "as ADDED)");
  flags.String("resource-version", '\0', &o.resource_version,
               "with -w: print the changes after this resourceVersion (from the cache's "
               "journal), then follow");
  flags.String("request-timeout", '\0', &request_timeout,
               "with -w: stop following after this long, e.g. 30s (0: until interrupted)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "get", &positional); rc >= 0) return rc;
  o.args = positional;
  kcache::StatusOr<std::chrono::milliseconds> timeout = ParseTimeout(request_timeout);
  if (!timeout.ok()) {
    std::cerr << "error: " << timeout.status().message() << "\n";
    return 1;
  }
  o.request_timeout = *timeout;
  kcache::StatusOr<int> rc = kcache::tool::RunGet(o, std::cout, std::cerr);
  if (!rc.ok()) {
    // kubectl's wording and exit code for every failure.
    std::cerr << "error: " << rc.status().message() << "\n";
    return 1;
  }
  return *rc;
}

int Stats(const std::vector<std::string>& args) {
  kcache::tool::StatsOptions o;
  kcache::cli::FlagSet flags;
  flags.String("cache", '\0', &o.cache_dir, "the cache directory to read");
  flags.String("snapshot", '\0', &o.snapshot, "the snapshot file to read (instead of --cache)");
  flags.String("namespace", 'n', &o.namespace_, "only this namespace in the per-namespace table");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "stats", &positional); rc >= 0) return rc;
  if (!positional.empty())
    return Fail(kcache::Status::InvalidArgument("unexpected argument \"" + positional[0] + "\""),
                "stats");
  kcache::Status st = kcache::tool::RunStats(o, std::cout);
  return st.ok() ? 0 : Fail(st, "stats");
}

int Tree(const std::vector<std::string>& args) {
  kcache::tool::TreeOptions o;
  kcache::cli::FlagSet flags;
  flags.String("cache", '\0', &o.cache_dir, "the cache directory to read");
  flags.String("snapshot", '\0', &o.snapshot, "the snapshot file to read (instead of --cache)");
  flags.String("namespace", 'n', &o.namespace_, "the object's namespace");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "tree", &positional); rc >= 0) return rc;
  if (positional.size() != 2) {
    return Fail(kcache::Status::InvalidArgument(
                    "name a resource type and an object, e.g. kcache tree deployments web"),
                "tree");
  }
  o.resource = positional[0];
  o.name = positional[1];
  kcache::Status st = kcache::tool::RunTree(o, std::cout);
  return st.ok() ? 0 : Fail(st, "tree");
}

// Exit codes as diff(1) and kubectl diff: 0 no differences, 1 differences,
// 2 trouble.
int Diff(const std::vector<std::string>& args) {
  kcache::tool::DiffOptions o;
  kcache::cli::FlagSet flags;
  flags.Bool("summary", '\0', &o.summary_only, "only the counts per resource");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "diff", &positional); rc >= 0) return rc;
  if (positional.size() != 2) {
    Fail(kcache::Status::InvalidArgument(
             "name two caches or snapshot files, e.g. kcache diff before.kcs after.kcs"),
         "diff");
    return 2;
  }
  o.from = positional[0];
  o.to = positional[1];
  kcache::StatusOr<bool> differ = kcache::tool::RunDiff(o, std::cout);
  if (!differ.ok()) {
    Fail(differ.status(), "diff");
    return 2;
  }
  return *differ ? 1 : 0;
}

int Snapshot(const std::vector<std::string>& args) {
  static const char* kVerbs = "create, export, import, verify";
  if (GroupHelp("snapshot", args)) return 0;
  if (args.empty())
    return Fail(kcache::Status::InvalidArgument(std::string("name a snapshot command: ") + kVerbs),
                "snapshot");
  const std::string verb = args[0];
  const std::string command = "snapshot " + verb;
  kcache::tool::SnapshotOptions o;
  int64_t level = 1;
  kcache::cli::FlagSet flags;
  if (verb != "verify") {
    flags.String(
        "cache", '\0', &o.cache_dir,
        verb == "import" ? "the cache directory to create" : "the cache directory to copy");
  }
  if (verb == "export") {
    flags.Int("zstd-level", '\0', &level, "zstd compression level, 1 (fast) to 19 (small)");
    flags.Bool("exclude-secrets", '\0', &o.exclude_secrets,
               "leave Secrets out of the file (its mode is 0600 either way)");
  }
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, {args.begin() + 1, args.end()}, command, &positional); rc >= 0)
    return rc;
  if (positional.size() > 1)
    return Fail(kcache::Status::InvalidArgument("unexpected argument \"" + positional[1] + "\""),
                command);
  if (!positional.empty()) o.target = positional[0];
  o.zstd_level = static_cast<int>(level);
  o.progress = isatty(STDERR_FILENO);
  kcache::Status st;
  if (verb == "create") {
    st = kcache::tool::RunSnapshotCreate(o, std::cout, std::cerr);
  } else if (verb == "export") {
    st = kcache::tool::RunSnapshotExport(o, std::cout, std::cerr);
  } else if (verb == "import") {
    st = kcache::tool::RunSnapshotImport(o, std::cout, std::cerr);
  } else if (verb == "verify") {
    st = kcache::tool::RunSnapshotVerify(o, std::cout, std::cerr);
  } else {
    return Fail(kcache::Status::InvalidArgument("unknown snapshot command \"" + verb +
                                                "\" (available: " + kVerbs + ")"),
                "snapshot");
  }
  return st.ok() ? 0 : Fail(st, command);
}

// kcache bench get measures its children's peak memory this way: a child
// started by a large process inherits that process's peak in its rusage.
void ReportPeakRss() {
  const char* path = std::getenv("KCACHE_BENCH_PEAK_RSS_FILE");
  if (!path || !*path) return;
  std::ifstream status("/proc/self/status");
  std::ofstream out(path);
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) out << line << "\n";
  }
}

int Run(std::vector<std::string> args) {
  if (args.size() >= 2 && args[0] == "help") {
    // kcache help COMMAND [SUBCOMMAND]: the same as COMMAND [SUBCOMMAND] --help.
    args.erase(args.begin());
    std::string command = args[0];
    if (args.size() >= 2) command += " " + args[1];
    if (!kcache::tool::FindHelp(command)) {
      std::cerr << "error: help: unknown command \"" << command << "\"\n\n" << kUsage;
      return 2;
    }
    args.push_back("--help");
  }
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "demo") return Demo(args);
  if (command == "bench") return Bench(args);
  if (command == "serve") return Serve(args);
  if (command == "sync") return Sync(args);
  if (command == "get") return Get(args);
  if (command == "stats") return Stats(args);
  if (command == "tree") return Tree(args);
  if (command == "diff") return Diff(args);
  if (command == "snapshot") return Snapshot(args);
  if (command == "version") {
    std::cout << "kcache " << KCACHE_VERSION << "\n";
    return 0;
  }
  std::cerr << "error: unknown command \"" << command << "\"\n\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int rc = Run(std::vector<std::string>(argv + 1, argv + argc));
  ReportPeakRss();
  return rc;
}
