// SPDX-License-Identifier: Apache-2.0

// kcache version: this build's versions and the formats it reads and writes,
// and, given a cache or snapshot file, the cluster version recorded in it,
// in kubectl version's idiom (-o json | yaml as well).

#include "kcache/version.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kcache/snapshot.h"
#include "kcache_version_number.h"  // the release this tool was built as
#include "tools/kcache/command.h"
#include "tools/kcache/kubectl/yaml.h"
#include "tools/kcache/source.h"

namespace kcache::tool {
namespace {

// What `--cache` or `--snapshot` records, as a JSON object; null if neither
// was given.
StatusOr<nlohmann::ordered_json> Recorded(const std::string& cache_dir,
                                          const std::string& snapshot) {
  if (cache_dir.empty() && snapshot.empty()) return nlohmann::ordered_json();
  if (!cache_dir.empty() && !snapshot.empty()) {
    return Status::InvalidArgument("--cache and --snapshot exclude each other");
  }
  std::optional<ClusterInfo> cluster;
  nlohmann::ordered_json out;
  if (!snapshot.empty()) {
    // The manifest alone: no need to open the rows.
    KCACHE_ASSIGN_OR_RETURN(SnapshotManifest manifest, ReadSnapshotManifest(snapshot));
    out["snapshot"] = snapshot;
    out["snapshotFormat"] = manifest.format_version;
    out["cacheFormat"] = manifest.storage_format;
    cluster = manifest.cluster;
  } else {
    KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, Source::Open(cache_dir, ""));
    KCACHE_ASSIGN_OR_RETURN(cluster, source->cache().GetClusterInfo());
    out["cache"] = source->path();
  }
  out["server"] = cluster ? cluster->server : "";
  out["serverVersion"] = cluster ? cluster->version : "";
  return out;
}

int VersionMain(const Command& self, const std::vector<std::string>& args) {
  std::string cache_dir, snapshot, output;
  cli::FlagSet flags;
  SourceFlags(flags, &cache_dir, &snapshot);
  flags.String("output", 'o', &output, "one of 'yaml' or 'json'");
  if (int rc = ParseFlagsOnly(self, flags, args); rc >= 0) return rc;
  if (!output.empty() && output != "json" && output != "yaml") {
    return Fail(Status::InvalidArgument("--output must be 'yaml' or 'json'"), "version");
  }
  StatusOr<nlohmann::ordered_json> recorded = Recorded(cache_dir, snapshot);
  if (!recorded.ok()) return Fail(recorded.status(), "version");
  const LibraryVersion lib = GetLibraryVersion();
  if (output.empty()) {
    std::cout << "kcache Version: " << KCACHE_LIBRARY_VERSION << "\n"
              << "Library Version: " << lib.version << "\n"
              << "Cache Format: " << lib.cache_format << " (opens " << lib.oldest_cache_format
              << " to " << lib.cache_format << ")\n"
              << "Snapshot Format: " << lib.snapshot_format << "\n";
    if (!recorded->is_null()) {
      const nlohmann::ordered_json& r = *recorded;
      if (r.contains("snapshot")) {
        std::cout << "Snapshot: " << r["snapshot"].get<std::string>() << " (format "
                  << r["snapshotFormat"].get<int>() << ", cache format "
                  << r["cacheFormat"].get<int>() << ")\n";
      } else {
        std::cout << "Cache: " << r["cache"].get<std::string>() << "\n";
      }
      const std::string server = r["server"], version = r["serverVersion"];
      std::cout << "Server: " << (server.empty() ? "not recorded" : server) << "\n"
                << "Server Version: " << (version.empty() ? "not recorded" : version) << "\n";
    }
    return 0;
  }
  nlohmann::ordered_json doc;
  doc["kcacheVersion"] = KCACHE_LIBRARY_VERSION;
  doc["libraryVersion"] = lib.version;
  doc["cacheFormat"] = {{"writes", lib.cache_format}, {"oldestRead", lib.oldest_cache_format}};
  doc["snapshotFormat"] = lib.snapshot_format;
  if (!recorded->is_null()) doc["recorded"] = *recorded;
  if (output == "json") {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::string yaml;
    AppendYaml(nlohmann::json::parse(doc.dump()), &yaml);
    std::cout << yaml;
  }
  return 0;
}

}  // namespace

const Command kVersionCommand = {
    "version",
    "version [(--cache DIR | --snapshot FILE)] [-o json|yaml]",
    "this build's version and formats; a cache's recorded cluster version",
    "Prints the versions of kcache and of libkcache, the cache format this build writes and "
    "the oldest it opens, and the snapshot file format it writes and reads. Given a cache or "
    "a snapshot file, also the cluster it was synced from and that cluster's version, as "
    "recorded (and for a snapshot file, its formats). `kcache --version` is the same as "
    "`kcache version`.",
    "  # This build\n"
    "  kcache version\n"
    "  # The cluster a snapshot was taken from, as JSON\n"
    "  kcache version --snapshot before.kcs -o json\n",
    VersionMain};

}  // namespace kcache::tool
