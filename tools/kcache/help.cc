#include "tools/kcache/help.h"

#include <iterator>

namespace kcache::tool {
namespace {

const CommandHelp kHelp[] = {
    {"demo", "demo [--pods N] [--namespaces N]",
     "Decodes, indexes and queries a built-in synthetic cluster in a temporary cache, then "
     "relists it, and prints what each step cost. Needs no cluster.",
     "  # The default: 20,000 pods over 10 namespaces\n"
     "  kcache demo\n"
     "  # A larger run\n"
     "  kcache demo --pods 200000 --namespaces 50\n"},
    {"sync", "sync RESOURCE... --cache DIR [--kubeconfig FILE] [--context NAME] [flags]",
     "Mirrors resources of a cluster into a cache directory (created if missing) and keeps it "
     "current until SIGINT or SIGTERM. RESOURCE is a name kubectl accepts: pods, po, "
     "deployments.apps, a custom resource's plural or short name. A restart resumes each "
     "resource's watch from the cache with no full LIST.",
     "  # Pods and nodes of the kubeconfig's cluster, until interrupted\n"
     "  kcache sync pods nodes --cache /var/lib/kcache\n"
     "  # One namespace, once, then exit\n"
     "  kcache sync deploy,cm -n prod --cache ./prod.cache --until-synced\n"
     "  # Against the built-in list/watch server, with JSON logs\n"
     "  kcache sync pods --server http://127.0.0.1:8001 --cache ./c --log-format=json\n"},
    {"get",
     "get (TYPE[.GROUP] [NAME...] | TYPE[.GROUP]/NAME... | TYPE1,TYPE2) (--cache DIR | "
     "--snapshot FILE) [flags]",
     "Prints objects from a cache (also while kcache sync writes it) or a snapshot file, as "
     "kubectl get prints them from the API server: the same tables, output formats, messages "
     "and exit codes. With -w it follows a cache's changes as kubectl follows a watch.",
     "  # Pods of namespace prod\n"
     "  kcache get pods -n prod --cache /var/lib/kcache\n"
     "  # Every pod with its node, as JSONPath\n"
     "  kcache get pods -A -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{\"\\n\"}"
     "{end}' --cache /var/lib/kcache\n"
     "  # One deployment as YAML, from a snapshot\n"
     "  kcache get deployment/web -n prod -o yaml --snapshot before.kcs\n"
     "  # Pods and services with their labels\n"
     "  kcache get pods,svc -n prod --show-labels --cache /var/lib/kcache\n"
     "  # Pods, then each change as kcache sync writes it (kubectl get -w)\n"
     "  kcache get pods -n prod -w --output-watch-events --cache /var/lib/kcache\n"
     "  # The changes after resourceVersion 81234 (from the cache's journal), then on\n"
     "  kcache get pods -A --watch-only --resource-version=81234 --cache /var/lib/kcache\n"},
    {"stats", "stats (--cache DIR | --snapshot FILE) [-n NAMESPACE]",
     "Objects, bytes, resume points and the last sync of each resource, and objects per "
     "namespace.",
     "  kcache stats --cache /var/lib/kcache\n"
     "  kcache stats --snapshot before.kcs -n prod\n"},
    {"tree", "tree TYPE NAME (--cache DIR | --snapshot FILE) [-n NAMESPACE]",
     "An object's owners and dependents, following ownerReferences across the resources the "
     "cache holds.",
     "  # What owns a pod, and what it owns\n"
     "  kcache tree pod web-7d4b9-x2k8p -n prod --cache /var/lib/kcache\n"
     "  kcache tree deployment web -n prod --snapshot before.kcs\n"},
    {"diff", "diff FROM TO [--summary]",
     "Added, removed and changed objects between two caches or snapshot files (each path is "
     "either). Exit code 0: no differences, 1: differences, 2: trouble.",
     "  kcache diff before.kcs after.kcs\n"
     "  kcache diff /var/lib/kcache after.kcs --summary\n"},
    {"serve",
     "serve ((--cache DIR | --snapshot FILE) [--token-file F] [--tls-cert-file C "
     "--tls-private-key-file K] | [--pods N] [churn and fault flags])",
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
     "  kcache serve --fault-cut '*5'\n"},
    {"snapshot", "snapshot (create | export | import | verify) ARGS [flags]",
     "Consistent copies of a cache: create (a directory), export (one portable, checksummed "
     "file), import (a new cache from a file; sync resumes from it) and verify (a file's "
     "checksums, manifest and indexes). All of them also while kcache sync writes the cache.",
     "  kcache snapshot export --cache /var/lib/kcache before.kcs\n"
     "  kcache snapshot verify before.kcs\n"
     "  kcache snapshot import before.kcs --cache ./restored\n"
     "  kcache snapshot create --cache /var/lib/kcache ./copy\n"},
    {"snapshot create", "snapshot create --cache DIR OUTDIR",
     "A consistent copy of a cache as a new directory (RocksDB checkpoint: hard links where "
     "the file system allows).",
     "  kcache snapshot create --cache /var/lib/kcache ./copy\n"},
    {"snapshot export", "snapshot export --cache DIR FILE [--zstd-level N]",
     "A consistent copy of a cache as one portable file, zstd-compressed and checksummed "
     "block by block (docs/snapshot-format.md).",
     "  kcache snapshot export --cache /var/lib/kcache before.kcs\n"
     "  kcache snapshot export --cache /var/lib/kcache small.kcs --zstd-level 19\n"},
    {"snapshot import", "snapshot import FILE --cache DIR",
     "A new cache from a snapshot file, after checking every block; a sync started on it "
     "resumes from the snapshot's resume points.",
     "  kcache snapshot import before.kcs --cache ./restored\n"},
    {"snapshot verify", "snapshot verify FILE",
     "Checks a snapshot file's checksums, manifest and indexes without importing it.",
     "  kcache snapshot verify before.kcs\n"},
    {"bench", "bench (decode | get | ingest | serve | snapshot | store) [flags]",
     "Benchmarks, each against a peer or a physical limit measured in the same run; "
     "docs/benchmarks.md has their figures.",
     "  kcache bench store --objects 100000\n"
     "  kcache bench get --objects 10000,100000,1000000\n"},
    {"bench decode", "bench decode [--objects N] [--runs N]",
     "Metadata extraction against a full JSON parse of the same pods.",
     "  kcache bench decode --objects 20000\n"},
    {"bench get", "bench get [--objects N,N,...] [--runs N] [--dir DIR]",
     "kcache get's time and peak memory over one cache grown through the given sizes, each "
     "form in its own process.",
     "  kcache bench get --objects 10000,100000,1000000 --runs 3\n"},
    {"bench ingest",
     "bench ingest [--pods N] [--object-bytes N] [--runs N] [--read-ahead-bytes N] [--dir DIR]\n"
     "                    [--label-index-cost] [--jsonl FILE]",
     "An informer's initial sync from kcache serve into a cache against raw RocksDB batched "
     "puts of the same bytes, with the CPU of each thread.",
     "  kcache bench ingest --pods 100000 --runs 3\n"},
    {"bench serve", "bench serve [--pods N] [--events N] [--runs N]",
     "kcache serve's LIST and watch rates against the loopback limit.",
     "  kcache bench serve --pods 50000\n"},
    {"bench snapshot", "bench snapshot [--objects N] [--runs N] [--zstd-level N]",
     "Snapshot export and import against the disk's write rate; open to first get.",
     "  kcache bench snapshot --objects 1000000\n"},
    {"bench store", "bench store [--objects N] [--batch N] [--runs N]",
     "Ingest and queries of the RocksDB cache against raw RocksDB batched puts.",
     "  kcache bench store --objects 100000\n"},
};

}  // namespace

const CommandHelp* FindHelp(const std::string& command) {
  for (const CommandHelp& h : kHelp) {
    if (command == h.command) return &h;
  }
  return nullptr;
}

std::string HelpText(const CommandHelp& h) {
  return std::string(h.summary) + "\n\nUsage:\n  kcache " + h.usage + "\n\nExamples:\n" +
         h.examples;
}

}  // namespace kcache::tool
