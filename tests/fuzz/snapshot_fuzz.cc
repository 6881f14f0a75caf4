// SPDX-License-Identifier: Apache-2.0

// The snapshot file reader. Properties: a file that VerifySnapshot accepts
// opens in place, and every object of every keyspace reads back; a file it
// refuses is refused by the in-place reader's reads too, never returned.
#include "fuzz/fuzz.h"
#include "kcache/cache.h"
#include "kcache/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  const std::string& path = kcache::fuzz::WriteInputFile(kcache::fuzz::Bytes(data, size));
  (void)kcache::ReadSnapshotManifest(path);
  auto verified = kcache::VerifySnapshot(path);
  if (!verified.ok()) return 0;
  auto cache = kcache::OpenSnapshot(path);
  Check(cache.ok(), "a verified snapshot does not open", cache.status().ToString());
  auto keyspaces = (*cache)->ListKeyspaces();
  Check(keyspaces.ok(), "a verified snapshot lists no keyspaces", keyspaces.status().ToString());
  for (const std::string& ks : *keyspaces) {
    auto store = (*cache)->OpenKeyspace(ks);
    Check(store.ok(), "a verified snapshot's keyspace does not open",
          ks + ": " + store.status().ToString());
    auto objects = (*store)->List();
    Check(objects.ok(), "a verified snapshot's keyspace does not list",
          ks + ": " + objects.status().ToString());
    auto stats = (*cache)->Stats(ks);
    Check(stats.ok() && stats->objects == objects->size(),
          "a verified snapshot's keyspace holds another count than its manifest", ks);
  }
  return 0;
}
