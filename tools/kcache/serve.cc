// SPDX-License-Identifier: Apache-2.0

// `kcache serve`: a read-only API over a cache or snapshot
// (serve_cache.h), or the synthetic test cluster (testcluster/server.h).
// One set of flags; each mode refuses the other's.

#include <chrono>
#include <cstddef>
#include <iostream>
#include <string>
#include <vector>

#include "tools/kcache/command.h"
#include "tools/kcache/serve_cache.h"
#include "tools/kcache/testcluster/server.h"

namespace kcache::tool {
namespace {

struct ServeFlags {
  serve::ServeOptions synthetic;
  int64_t seed = 1;
  int64_t bookmark_seconds = 60;
  std::string cut, expire, throttle, error, malformed, stall;
  std::string cache_dir, snapshot;
  CacheServeOptions cache;
  int64_t max_connections = 2048, max_watches_per_client = 500;
  int64_t header_timeout_seconds = 10, idle_timeout_seconds = 90, write_timeout_seconds = 60;
  // The flags of one mode only, which the other refuses.
  std::vector<std::string> synthetic_only, cache_only;
};

// The names of the flags that `define` adds to `flags`.
template <typename Define>
std::vector<std::string> Defined(cli::FlagSet& flags, Define define) {
  const size_t before = flags.Names().size();
  define();
  std::vector<std::string> names = flags.Names();
  names.erase(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(before));
  return names;
}

void DefineSynthetic(cli::FlagSet& flags, ServeFlags* f) {
  serve::ServeOptions& o = f->synthetic;
  flags.Int("pods", '\0', &o.cluster.pods, "pods in the synthetic cluster");
  flags.Int("namespaces", '\0', &o.cluster.namespaces, "namespaces the pods are spread over");
  flags.Int("nodes", '\0', &o.cluster.nodes, "nodes the pods run on");
  flags.Int("object-bytes", '\0', &o.cluster.object_bytes,
            "pad each pod to this many bytes (0: natural, about 6.5 KB)");
  flags.Int("seed", '\0', &f->seed, "seed of the synthetic cluster and its churn");
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
  flags.String("fault-cut", '\0', &f->cut, "requests cut mid-way, e.g. 3,7 or *5 (every fifth)");
  flags.String("fault-expire", '\0', &f->expire, "requests answered 410 Expired");
  flags.String("fault-throttle", '\0', &f->throttle, "requests answered 429 with Retry-After");
  flags.Int("retry-after", '\0', &o.api.faults.retry_after_seconds,
            "Retry-After seconds of --fault-throttle");
  flags.String("fault-error", '\0', &f->error, "requests answered 500 InternalError");
  flags.String("fault-malformed", '\0', &f->malformed, "requests whose body has malformed JSON");
  flags.String("fault-stall", '\0', &f->stall,
               "requests that stall after the headers (and a watch's initial events)");
  flags.Int("fault-slow", '\0', &o.api.faults.slow_bytes_per_second,
            "send every response at most this many bytes per second (0: no limit)");
}

void DefineCache(cli::FlagSet& flags, ServeFlags* f) {
  flags.Bool("serve-secrets", '\0', &f->cache.serve_secrets,
             "with --cache or --snapshot: serve secrets too");
  KeyFlags(flags);
  flags.String("token-file", '\0', &f->cache.token_file,
               "with --cache or --snapshot: require a bearer token from this file, one per line "
               "with what it may read: TOKEN [name=USER] [resources=R,...] [namespaces=N,...]");
  flags.String("tls-cert-file", '\0', &f->cache.tls_cert_file,
               "with --cache or --snapshot: serve HTTPS with this certificate chain (PEM)");
  flags.String("tls-private-key-file", '\0', &f->cache.tls_key_file,
               "with --cache or --snapshot: the private key of --tls-cert-file (PEM)");
  flags.Int("max-connections", '\0', &f->max_connections,
            "with --cache or --snapshot: connections served at once; more are answered 429");
  flags.Int("max-watches-per-client", '\0', &f->max_watches_per_client,
            "with --cache or --snapshot: watches open at once per token (or per address without "
            "tokens); more are answered 429");
  flags.Int("header-timeout", '\0', &f->header_timeout_seconds,
            "with --cache or --snapshot: seconds for a request's head to arrive (its body gets "
            "three times as long)");
  flags.Int("idle-timeout", '\0', &f->idle_timeout_seconds,
            "with --cache or --snapshot: seconds a kept-alive connection may wait for its next "
            "request");
  flags.Int("write-timeout", '\0', &f->write_timeout_seconds,
            "with --cache or --snapshot: seconds a response may send nothing to a client that "
            "does not read before the connection is cut");
}

void Define(cli::FlagSet& flags, ServeFlags* f) {
  serve::ServeOptions& o = f->synthetic;
  flags.String("listen", '\0', &o.listen,
               "HOST:PORT to serve on (port 0: any free one), or unix:PATH");
  flags.Int("bookmark-interval", '\0', &f->bookmark_seconds,
            "seconds between bookmarks on a watch that allows them");
  flags.String("cache", '\0', &f->cache_dir,
               "serve this cache read-only (as a sync writes it) instead of a synthetic cluster");
  flags.String("snapshot", '\0', &f->snapshot,
               "serve this snapshot file read-only, in place (instead of --cache)");
  f->synthetic_only = Defined(flags, [&] { DefineSynthetic(flags, f); });
  f->cache_only = Defined(flags, [&] { DefineCache(flags, f); });
}

int ServeCacheMode(const Command& self, const cli::FlagSet& flags, ServeFlags& f) {
  for (const std::string& synthetic : f.synthetic_only) {
    if (flags.Changed(synthetic)) {
      return Fail(
          Status::InvalidArgument("--" + synthetic + " applies to the synthetic cluster, not to " +
                                  (f.snapshot.empty() ? "--cache" : "--snapshot")),
          self.name);
    }
  }
  if (flags.Changed("listen")) f.cache.listen = f.synthetic.listen;
  f.cache.bookmark_interval = std::chrono::seconds(f.bookmark_seconds);
  for (auto [name, value] : {std::pair{"max-connections", f.max_connections},
                             {"max-watches-per-client", f.max_watches_per_client},
                             {"header-timeout", f.header_timeout_seconds},
                             {"idle-timeout", f.idle_timeout_seconds},
                             {"write-timeout", f.write_timeout_seconds}}) {
    if (value <= 0) {
      return Fail(Status::InvalidArgument("--" + std::string(name) + " must be positive, not " +
                                          std::to_string(value)),
                  self.name);
    }
  }
  f.cache.http.max_connections = static_cast<size_t>(f.max_connections);
  f.cache.max_watches_per_client = static_cast<size_t>(f.max_watches_per_client);
  f.cache.http.header_timeout = std::chrono::seconds(f.header_timeout_seconds);
  f.cache.http.body_timeout = std::chrono::seconds(3 * f.header_timeout_seconds);
  f.cache.http.idle_timeout = std::chrono::seconds(f.idle_timeout_seconds);
  f.cache.http.write_timeout = std::chrono::seconds(f.write_timeout_seconds);
  Status st = RunServeCache(f.cache_dir, f.snapshot, f.cache, std::cout);
  return st.ok() ? 0 : Fail(st, self.name);
}

int ServeSyntheticMode(const Command& self, const cli::FlagSet& flags, ServeFlags& f) {
  for (const std::string& cache_only : f.cache_only) {
    if (flags.Changed(cache_only)) {
      return Fail(
          Status::InvalidArgument("--" + cache_only + " applies to --cache and --snapshot only"),
          self.name);
    }
  }
  serve::ServeOptions& o = f.synthetic;
  o.cluster.seed = static_cast<uint64_t>(f.seed);
  o.api.bookmark_interval = std::chrono::seconds(f.bookmark_seconds);
  const std::pair<const char*, std::pair<const std::string*, serve::RequestSet*>> sets[] = {
      {"fault-cut", {&f.cut, &o.api.faults.cut}},
      {"fault-expire", {&f.expire, &o.api.faults.expire}},
      {"fault-throttle", {&f.throttle, &o.api.faults.throttle}},
      {"fault-error", {&f.error, &o.api.faults.internal_error}},
      {"fault-malformed", {&f.malformed, &o.api.faults.malformed}},
      {"fault-stall", {&f.stall, &o.api.faults.stall}}};
  for (const auto& [flag, spec_and_set] : sets) {
    StatusOr<serve::RequestSet> parsed = serve::RequestSet::Parse(flag, *spec_and_set.first);
    if (!parsed.ok()) return Fail(parsed.status(), self.name);
    *spec_and_set.second = std::move(parsed).value();
  }
  Status st = serve::RunServe(o, std::cout);
  return st.ok() ? 0 : Fail(st, self.name);
}

int ServeMain(const Command& self, const std::vector<std::string>& args) {
  ServeFlags f;
  cli::FlagSet flags;
  Define(flags, &f);
  if (int rc = ParseFlagsOnly(self, flags, args); rc >= 0) return rc;
  if (f.bookmark_seconds < 1) {
    return Fail(Status::InvalidArgument("--bookmark-interval must be at least 1"), self.name);
  }
  if (!f.cache_dir.empty() || !f.snapshot.empty()) return ServeCacheMode(self, flags, f);
  return ServeSyntheticMode(self, flags, f);
}

}  // namespace

const Command kServeCommand = {
    "serve",
    "serve ((--cache DIR | --snapshot FILE) [--token-file F] [--tls-cert-file C "
    "--tls-private-key-file K] | [--pods N] [churn and fault flags])",
    "a read-only Kubernetes API over a cache or a snapshot file, or a synthetic cluster",
    "With --cache: a read-only Kubernetes API over a cache (also while kcache sync writes it) "
    "for kubectl, informers and scripts: discovery, get, list, watch from the cache's change "
    "journal, server-side tables. With --snapshot: the same over a snapshot file, read in "
    "place (a cluster as it was, for a post-mortem). Otherwise a list/watch server with a "
    "synthetic cluster: "
    "pods, configmaps, namespaces, nodes and a custom resource, with churn and injected "
    "faults, for demos and tests. A cache or snapshot is served on loopback addresses unless "
    "it is served over TLS with bearer tokens.",
    "  # One sync of the cluster, many readers\n"
    "  kcache serve --cache /var/lib/kcache --listen 127.0.0.1:8001\n"
    "  kubectl --server http://127.0.0.1:8001 get pods -A -w\n"
    "  # Yesterday's cluster, from its snapshot\n"
    "  kcache serve --snapshot cluster.kcs --listen 127.0.0.1:8002\n"
    "  # 10,000 pods, 50 status updates a second\n"
    "  kcache serve --listen 127.0.0.1:8001 --pods 10000 --updates 50\n"
    "  # Every fifth request cut off mid-way\n"
    "  kcache serve --fault-cut '*5'\n",
    ServeMain};

}  // namespace kcache::tool
