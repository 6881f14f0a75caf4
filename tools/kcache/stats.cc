// SPDX-License-Identifier: Apache-2.0

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "kcache/encryption.h"
#include "kcache/key.h"
#include "kcache/lister.h"
#include "tools/kcache/command.h"
#include "tools/kcache/inspect.h"
#include "tools/kcache/kubectl/printers.h"
#include "tools/kcache/kubectl/tables.h"
#include "tools/kcache/source.h"
#include "util/rfc3339.h"

namespace kcache::tool {
namespace {

std::string Bytes(uint64_t n) {
  std::ostringstream out;
  if (n < 10000) {
    out << n << " B";
  } else if (n < 10'000'000) {
    out << std::fixed << std::setprecision(1) << n / 1e3 << " kB";
  } else if (n < 10'000'000'000) {
    out << std::fixed << std::setprecision(1) << n / 1e6 << " MB";
  } else {
    out << std::fixed << std::setprecision(1) << n / 1e9 << " GB";
  }
  return out.str();
}

}  // namespace

Status RunStats(const StatsOptions& options, std::ostream& out) {
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> source,
                          Source::Open(options.cache_dir, options.snapshot));
  KCACHE_ASSIGN_OR_RETURN(std::optional<ClusterInfo> cluster, source->cache().GetClusterInfo());
  out << "SOURCE    " << source->path() << "\n";
  if (cluster) {
    out << "CLUSTER   " << cluster->server
        << (cluster->version.empty() ? "" : " (" + cluster->version + ")") << "\n";
  }
  // Which resources are sealed, from the keyring's record: readable
  // without the key.
  KCACHE_ASSIGN_OR_RETURN(EncryptionStatus sealed, GetEncryptionStatus(source->cache()));
  if (sealed.encrypted) {
    std::string names;
    for (const std::string& ks : sealed.keyspaces) names += (names.empty() ? "" : ", ") + ks;
    out << "ENCRYPTED " << (names.empty() ? "<none yet>" : names) << " (key-encryption key "
        << sealed.key_fingerprint << ", data key " << sealed.current_data_key << " of "
        << sealed.data_keys.size() << ")\n";
  }
  out << "\n";
  auto now = std::chrono::system_clock::now();
  std::vector<std::vector<std::string>> rows = {{"RESOURCE", "KIND", "SCOPE", "OBJECTS", "ON DISK",
                                                 "RESOURCEVERSION", "LAST SYNC", "JOURNAL"}};
  for (const KeyspaceStats& ks : source->keyspaces()) {
    std::string rv = ks.resource_version.empty() ? "<none>" : ks.resource_version;
    if (ks.relist_in_progress) rv += " (relist incomplete: the next sync relists)";
    rows.push_back(
        {ks.name, ks.resource ? ks.resource->kind : "<unknown>",
         ks.resource ? (ks.resource->namespaced ? "Namespaced" : "Cluster") : "<unknown>",
         std::to_string(ks.objects), Bytes(ks.bytes_on_disk), rv,
         ks.last_sync ? util::FormatRfc3339(*ks.last_sync) + " (" +
                            HumanDuration(now - *ks.last_sync) + " ago)"
                      : "<unknown>",
         // The changes kcache get -w and readers can follow from.
         ks.journal.start.empty() ? "<none>"
                                  : std::to_string(ks.journal.events) + " changes after " +
                                        ks.journal.start + " (" + Bytes(ks.journal.bytes) + ")"});
  }
  PrintTable(rows, out);

  // What a keyspace synced with a namespace or selectors holds is part of
  // its resource only.
  std::vector<std::vector<std::string>> selected = {
      {"RESOURCE", "NAMESPACE", "LABEL SELECTOR", "FIELD SELECTOR"}};
  for (const KeyspaceStats& ks : source->keyspaces()) {
    if (!ks.resource || !ks.resource->selection || *ks.resource->selection == ResourceSelection{})
      continue;
    const ResourceSelection& s = *ks.resource->selection;
    auto or_none = [](const std::string& v) { return v.empty() ? std::string("<all>") : v; };
    selected.push_back(
        {ks.name, or_none(s.namespace_), or_none(s.label_selector), or_none(s.field_selector)});
  }
  if (selected.size() > 1) {
    out << "\n";
    PrintTable(selected, out);
  }

  // Per namespace: one pass over each namespaced keyspace (or over one
  // namespace's key range, with -n). A sealed keyspace read without its key
  // is counted by its keys: its objects' bytes are not readable.
  using Counts = std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>>;
  Counts per;                        // (ns, ks) -> (objects, bytes)
  std::set<std::string> unreadable;  // sealed keyspaces read without the key
  for (const KeyspaceStats& ks : source->keyspaces()) {
    if (!source->Namespaced(ks.name)) continue;
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, source->Keyspace(ks.name));
    Counts mine;
    Status st = ListAllByNamespace(*indexer, options.namespace_, LabelSelector::Everything(),
                                   [&](const ObjectPtr& o) {
                                     auto& [objects, bytes] = mine[{o->namespace_(), ks.name}];
                                     ++objects;
                                     bytes += o->json().size();
                                     return true;
                                   });
    const bool is_sealed = std::find(sealed.keyspaces.begin(), sealed.keyspaces.end(), ks.name) !=
                           sealed.keyspaces.end();
    if (!st.ok() && is_sealed && st.code() == StatusCode::kFailedPrecondition) {
      mine.clear();
      unreadable.insert(ks.name);
      KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> keys, indexer->ListKeys());
      for (const std::string& key : keys) {
        KCACHE_ASSIGN_OR_RETURN(ObjectName name, SplitMetaNamespaceKey(key));
        if (options.namespace_.empty() || name.namespace_ == options.namespace_) {
          ++mine[{name.namespace_, ks.name}].first;
        }
      }
    } else {
      KCACHE_RETURN_IF_ERROR(st);
    }
    per.merge(mine);
  }
  if (!per.empty()) {
    out << "\n";
    std::vector<std::vector<std::string>> by_ns = {{"NAMESPACE", "RESOURCE", "OBJECTS", "JSON"}};
    for (const auto& [k, v] : per) {
      by_ns.push_back({k.first, k.second, std::to_string(v.first),
                       unreadable.count(k.second) ? "<encrypted>" : Bytes(v.second)});
    }
    PrintTable(by_ns, out);
  }
  return Status::OK();
}

namespace {

int StatsMain(const Command& self, const std::vector<std::string>& args) {
  StatsOptions o;
  cli::FlagSet flags;
  SourceFlags(flags, &o.cache_dir, &o.snapshot);
  flags.String("namespace", 'n', &o.namespace_, "only this namespace in the per-namespace table");
  if (int rc = ParseFlagsOnly(self, flags, args); rc >= 0) return rc;
  Status st = RunStats(o, std::cout);
  return st.ok() ? 0 : Fail(st, "stats");
}

}  // namespace

const Command kStatsCommand = {
    "stats",
    "stats (--cache DIR | --snapshot FILE) [-n NAMESPACE]",
    "objects, bytes, resume points and last sync per resource and namespace",
    "Objects, bytes, resume points and the last sync of each resource, and objects per "
    "namespace.",
    "  kcache stats --cache /var/lib/kcache\n"
    "  kcache stats --snapshot before.kcs -n prod\n",
    StatsMain};

}  // namespace kcache::tool
