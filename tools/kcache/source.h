// SPDX-License-Identifier: Apache-2.0

// What the inspection commands read: a cache directory, opened read-only
// (also while a sync writes it), or a snapshot file, read in place
// (OpenSnapshot).

#ifndef KCACHE_TOOLS_KCACHE_SOURCE_H_
#define KCACHE_TOOLS_KCACHE_SOURCE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kcache/cache.h"
#include "kcache/indexer.h"

namespace kcache::tool {

// Source::Resolve over `keyspaces` (name and recorded ResourceInfo
// suffice); NotFound names `where`.
StatusOr<std::string> ResolveKeyspace(std::string name, const std::vector<KeyspaceStats>& keyspaces,
                                      const std::string& where);

class Source {
 public:
  // Exactly one of `cache_dir` and `snapshot` is set; else InvalidArgument.
  static StatusOr<std::unique_ptr<Source>> Open(const std::string& cache_dir,
                                                const std::string& snapshot);
  // `path` is a cache directory or a snapshot file, whichever it is.
  static StatusOr<std::unique_ptr<Source>> OpenPath(const std::string& path);
  ~Source();

  Cache& cache() { return *cache_; }
  const std::string& path() const { return path_; }

  // The keyspace `name` means, as kubectl would resolve it: its plural,
  // singular, kind or short name as recorded at sync time, alone or with
  // its group; for caches that recorded none, kubectl's common short names
  // and plural guesses. NotFound lists the keyspaces there are.
  StatusOr<std::string> Resolve(std::string name) const;
  // The keyspaces of category `name` ("all"), as kubectl expands it: those
  // whose recorded categories include it, in discovery's order. A cache
  // that recorded no categories expands "all" as kubectl does without
  // them. Empty if `name` is no category.
  std::vector<std::string> Category(std::string name) const;
  // The store of a keyspace (opened once, then shared).
  StatusOr<std::shared_ptr<Indexer>> Keyspace(const std::string& keyspace);
  // What the keyspace holds, as recorded at sync time, else as far as its
  // name and keys tell (kind empty).
  ResourceInfo Info(const std::string& keyspace);
  // Whether the keyspace's objects have namespaces: as recorded, else as
  // its keys show.
  bool Namespaced(const std::string& keyspace);
  // Every keyspace's stats, sorted by name, as of opening.
  const std::vector<KeyspaceStats>& keyspaces() const { return keyspaces_; }

 private:
  Source() = default;
  Status Load();

  std::string path_;
  std::shared_ptr<Cache> cache_;
  std::vector<KeyspaceStats> keyspaces_;
  std::map<std::string, std::shared_ptr<Indexer>> open_;
};

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_SOURCE_H_
