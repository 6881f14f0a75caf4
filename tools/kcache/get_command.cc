// SPDX-License-Identifier: Apache-2.0

// `kcache get`'s command line: its flags, help and examples, into
// GetOptions for RunGet (get.h).

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "tools/kcache/command.h"
#include "tools/kcache/flags.h"
#include "tools/kcache/get.h"

namespace kcache::tool {

namespace {

int GetMain(const Command& self, const std::vector<std::string>& args) {
  GetOptions o;
  std::string request_timeout = "0";
  cli::FlagSet flags;
  SourceFlags(flags, &o.cache_dir, &o.snapshot);
  flags.String("postgres", '\0', &o.postgres,
               "read a fleet database that kcache sync --postgres feeds (a libpq URL)");
  flags.String("cluster", '\0', &o.cluster, "with --postgres: the cluster to read");
  flags.Bool("all-clusters", '\0', &o.all_clusters, "with --postgres: read every cluster");
  flags.String("namespace", 'n', &o.namespace_, "the namespace to list");
  flags.Bool("all-namespaces", 'A', &o.all_namespaces, "list every namespace");
  flags.String("selector", 'l', &o.label_selector, "label selector, e.g. app=web");
  flags.String("field-selector", '\0', &o.field_selector,
               "field selector, e.g. spec.nodeName=node-1");
  flags.String("index", '\0', &o.index, "objects whose index INDEX has VALUE: INDEX=VALUE");
  flags.String("output", 'o', &o.output,
               "json, yaml, name, wide, jsonpath=..., jsonpath-file=..., jsonpath-as-json=..., "
               "custom-columns=..., custom-columns-file=... (default: a table)");
  flags.String("template", '\0', &o.template_, "the template of -o jsonpath or -o go-template");
  flags.String("sort-by", '\0', &o.sort_by,
               "sort by a field, as a JSONPath: {.metadata.creationTimestamp}");
  flags.Bool("no-headers", '\0', &o.no_headers, "print tables without their header");
  flags.Bool("show-labels", '\0', &o.show_labels, "add a LABELS column");
  flags.StringSlice("label-columns", 'L', &o.label_columns,
                    "a column for each of these label keys (repeatable, or comma-separated)");
  flags.Bool("show-managed-fields", '\0', &o.show_managed_fields,
             "keep metadata.managedFields in -o json and -o yaml");
  flags.Bool("ignore-not-found", '\0', &o.ignore_not_found,
             "a named object that does not exist is no error (exit code 0)");
  flags.Bool("show-kind", '\0', &o.show_kind,
             "name objects KIND/NAME in tables, also for one resource type");
  flags.Int("chunk-size", '\0', &o.chunk_size,
            "accepted as kubectl's; a cache is read in place, whatever the size");
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
  if (int rc = ParseFlags(self, flags, args, &positional); rc >= 0) return rc;
  o.args = positional;
  StatusOr<std::chrono::milliseconds> timeout = cli::ParseDuration(request_timeout);
  if (!timeout.ok()) {
    std::cerr << "error: " << timeout.status().message() << "\n";
    return 1;
  }
  o.request_timeout = *timeout;
  StatusOr<int> rc = RunGet(o, std::cout, std::cerr);
  if (!rc.ok()) {
    // kubectl's wording and exit code for every failure.
    std::cerr << "error: " << ErrorText(rc.status()) << "\n";
    return 1;
  }
  return *rc;
}

}  // namespace

const Command kGetCommand = {
    "get",
    "get (TYPE[.GROUP] [NAME...] | TYPE[.GROUP]/NAME... | TYPE1,TYPE2) (--cache DIR | "
    "--snapshot FILE) [flags]",
    "objects from a cache (also while sync runs) or a snapshot, as kubectl get",
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
    "  kcache get pods -A --watch-only --resource-version=81234 --cache /var/lib/kcache\n"
    "  # Pending pods of every cluster a fleet database holds\n"
    "  kcache get pods -A --field-selector status.phase=Pending --all-clusters --postgres "
    "postgresql://fleet@db/kcache\n",
    GetMain,
    /*kubectl_flag_errors=*/true};

}  // namespace kcache::tool
