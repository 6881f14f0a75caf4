// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/source.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "kcache/snapshot.h"
#include "tools/kcache/apiserver/resource_types.h"
#include "tools/kcache/command.h"
#include "util/strings.h"

namespace kcache::tool {
namespace {

namespace fs = std::filesystem;

constexpr size_t kReaderBlockCacheBytes = size_t{16} << 20;

// kubectl's short names for the common built-in resources.
const std::map<std::string, std::string>& ShortNames() {
  static const std::map<std::string, std::string> m = {{"po", "pods"},
                                                       {"cm", "configmaps"},
                                                       {"ns", "namespaces"},
                                                       {"no", "nodes"},
                                                       {"svc", "services"},
                                                       {"deploy", "deployments.apps"},
                                                       {"rs", "replicasets.apps"},
                                                       {"sts", "statefulsets.apps"},
                                                       {"ds", "daemonsets.apps"},
                                                       {"sa", "serviceaccounts"},
                                                       {"ep", "endpoints"},
                                                       {"secret", "secrets"}};
  return m;
}

}  // namespace

Source::~Source() = default;

StatusOr<std::unique_ptr<Source>> Source::Open(const std::string& cache_dir,
                                               const std::string& snapshot) {
  if (cache_dir.empty() == snapshot.empty()) {
    return Status::InvalidArgument(cache_dir.empty()
                                       ? "name what to read: --cache DIR or --snapshot FILE"
                                       : "--cache and --snapshot exclude each other");
  }
  std::unique_ptr<Source> s(new Source());
  s->path_ = cache_dir.empty() ? snapshot : cache_dir;
  if (!snapshot.empty()) {
    // Read in place: one verifying pass, then only the blocks a command
    // touches.
    SnapshotReadOptions o;
    o.block_cache_bytes = kReaderBlockCacheBytes;
    KCACHE_ASSIGN_OR_RETURN(o.key_encryption_key, GivenKeyEncryptionKey());
    KCACHE_ASSIGN_OR_RETURN(s->cache_, OpenSnapshot(snapshot, o));
  } else {
    CacheOptions o;
    o.create_if_missing = false;
    KCACHE_ASSIGN_OR_RETURN(o.encryption.key_encryption_key, GivenKeyEncryptionKey());
    // One command reads each block about once: a large block cache would
    // only hold what was read, growing the process with the cache's size.
    o.block_cache_bytes = kReaderBlockCacheBytes;
    KCACHE_ASSIGN_OR_RETURN(s->cache_, Cache::OpenReadOnly(cache_dir, o));
  }
  KCACHE_RETURN_IF_ERROR(s->Load());
  return s;
}

StatusOr<std::unique_ptr<Source>> Source::OpenPath(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Open(path, "");
  if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file or directory");
  if (std::ifstream probe(path, std::ios::binary); !probe) {
    return Status::IOError("open " + path + ": " + std::strerror(errno));
  }
  if (!LooksLikeSnapshot(path))
    return Status::InvalidArgument(path + " is neither a cache directory nor a snapshot file");
  return Open("", path);
}

Status Source::Load() {
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> names, cache_->ListKeyspaces());
  for (const std::string& ks : names) {
    KCACHE_ASSIGN_OR_RETURN(KeyspaceStats st, cache_->Stats(ks));
    keyspaces_.push_back(std::move(st));
  }
  return Status::OK();
}

StatusOr<std::string> Source::Resolve(std::string name) const {
  return ResolveKeyspace(std::move(name), keyspaces_, path_);
}

StatusOr<std::string> ResolveKeyspace(std::string name,
                                      const std::vector<KeyspaceStats>& keyspaces_,
                                      const std::string& where) {
  name = AsciiLower(std::move(name));
  // As kubectl resolves: plurals first, then singulars, short names and
  // kinds, each alone or followed by ".group" (or ".version.group").
  auto matches = [&](const std::string& n, const ResourceInfo& r) {
    if (n.empty()) return false;
    if (name == n) return true;
    if (r.group.empty()) return name == n + "." + r.version;
    return name == n + "." + r.group || name == n + "." + r.version + "." + r.group;
  };
  // A keyspace by its name: one of several informers of a resource
  // ("configmaps#owned"). Otherwise the resource's own keyspace comes
  // first, as it sorts before its named ones.
  for (const KeyspaceStats& ks : keyspaces_) {
    if (AsciiLower(ks.name) == name) return ks.name;
  }
  for (const KeyspaceStats& ks : keyspaces_) {
    if (ks.resource && matches(ks.resource->resource, *ks.resource)) return ks.name;
  }
  for (const KeyspaceStats& ks : keyspaces_) {
    if (!ks.resource) continue;
    const ResourceInfo& r = *ks.resource;
    if (matches(r.singular, r) || matches(AsciiLower(r.kind), r)) return ks.name;
    for (const std::string& s : r.short_names) {
      if (matches(s, r)) return ks.name;
    }
  }
  // Caches that recorded no names: kubectl's common short names and plural
  // guesses.
  std::string guess = name;
  if (auto s = ShortNames().find(guess); s != ShortNames().end()) guess = s->second;
  for (const std::string& candidate : {guess, guess + "s", guess + "es"}) {
    for (const KeyspaceStats& ks : keyspaces_) {
      if (ks.name == candidate || ks.name.substr(0, ks.name.find('.')) == candidate) return ks.name;
    }
  }
  std::string have;
  for (const KeyspaceStats& ks : keyspaces_) have += (have.empty() ? "" : ", ") + ks.name;
  return Status::NotFound(where + " has no resource type \"" + name +
                          "\" (it has: " + (have.empty() ? "nothing yet" : have) + ")");
}

std::vector<std::string> Source::Category(std::string name) const {
  name = AsciiLower(std::move(name));
  bool recorded = false;
  std::vector<const KeyspaceStats*> members;
  for (const KeyspaceStats& ks : keyspaces_) {
    // A named informer's keyspace repeats part of its resource's.
    if (!ks.resource || ks.name.find('#') != std::string::npos) continue;
    const std::vector<std::string>& c = ks.resource->categories;
    recorded = recorded || !c.empty();
    if (std::find(c.begin(), c.end(), name) != c.end()) members.push_back(&ks);
  }
  if (!recorded && name == "all") {
    // kubectl's own list for servers that report no categories.
    static const std::set<std::string> kAll = {"pods",
                                               "replicationcontrollers",
                                               "services",
                                               "statefulsets.apps",
                                               "horizontalpodautoscalers.autoscaling",
                                               "jobs.batch",
                                               "cronjobs.batch",
                                               "daemonsets.apps",
                                               "deployments.apps",
                                               "replicasets.apps"};
    for (const KeyspaceStats& ks : keyspaces_) {
      if (kAll.count(ks.name)) members.push_back(&ks);
    }
  }
  auto group = [](const KeyspaceStats* ks) {
    if (ks->resource) return ks->resource->group;
    const size_t dot = ks->name.find('.');
    return dot == std::string::npos ? std::string() : ks->name.substr(dot + 1);
  };
  auto plural = [](const KeyspaceStats* ks) {
    return ks->resource ? ks->resource->resource : ks->name.substr(0, ks->name.find('.'));
  };
  std::stable_sort(
      members.begin(), members.end(), [&](const KeyspaceStats* a, const KeyspaceStats* b) {
        const std::string ga = group(a), gb = group(b);
        const int ra = serve::GroupDiscoveryRank(ga), rb = serve::GroupDiscoveryRank(gb);
        if (ra != rb) return ra < rb;
        if (ga != gb) return ga < gb;
        return plural(a) < plural(b);
      });
  std::vector<std::string> out;
  for (const KeyspaceStats* ks : members) out.push_back(ks->name);
  return out;
}

ResourceInfo Source::Info(const std::string& keyspace) {
  for (const KeyspaceStats& ks : keyspaces_) {
    if (ks.name == keyspace && ks.resource) return *ks.resource;
  }
  // Not recorded: the resource and group from the keyspace's name, the
  // scope from its keys; the kind is left to the objects.
  ResourceInfo r;
  size_t dot = keyspace.find('.');
  r.resource = keyspace.substr(0, dot);
  if (dot != std::string::npos) r.group = keyspace.substr(dot + 1);
  r.namespaced = Namespaced(keyspace);
  return r;
}

StatusOr<std::shared_ptr<Indexer>> Source::Keyspace(const std::string& keyspace) {
  auto it = open_.find(keyspace);
  if (it != open_.end()) return it->second;
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, cache_->OpenKeyspace(keyspace));
  open_[keyspace] = indexer;
  return indexer;
}

bool Source::Namespaced(const std::string& keyspace) {
  for (const KeyspaceStats& ks : keyspaces_) {
    if (ks.name == keyspace && ks.resource) return ks.resource->namespaced;
  }
  auto indexer = Keyspace(keyspace);
  if (!indexer.ok()) return true;
  auto it = (*indexer)->NewIterator();
  return !it->Valid() || it->key().find('/') != std::string::npos;
}

}  // namespace kcache::tool
