// SPDX-License-Identifier: Apache-2.0

// Indexer: a Store with secondary indexes (client-go's cache.Indexer).
//
// An index function maps an object to zero or more index values; the index
// maps each value to the keys of the objects that produced it. Values whose
// last object goes away disappear from the index.
//
// Thread-safety: implementations are safe for concurrent use by multiple
// threads without external synchronization. Index functions may be called
// from any thread and must be pure: the same object gives the same values.

#ifndef KCACHE_INDEXER_H_
#define KCACHE_INDEXER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/store.h"

namespace kcache {

using IndexFunc = std::function<StatusOr<std::vector<std::string>>(const Object&)>;
using Indexers = std::map<std::string, IndexFunc, std::less<>>;

// The name of the built-in namespace index, and its function.
inline constexpr char kNamespaceIndex[] = "namespace";
KCACHE_EXPORT StatusOr<std::vector<std::string>> MetaNamespaceIndexFunc(const Object& object);

// The label index: one value "key=value" per label. Listers use it for
// selectors with an =, == or in requirement.
inline constexpr char kLabelIndex[] = "kcache.io/labels";
KCACHE_EXPORT StatusOr<std::vector<std::string>> MetaLabelIndexFunc(const Object& object);

class KCACHE_EXPORT Indexer : public Store {
 public:
  // Objects sharing any index value with `object` under index `name`.
  // NotFound "Index with name <name> does not exist" for an unknown index.
  virtual StatusOr<std::vector<ObjectPtr>> Index(std::string_view name,
                                                 const Object& object) const = 0;
  // Keys with `value` under `name`, sorted.
  virtual StatusOr<std::vector<std::string>> IndexKeys(std::string_view name,
                                                       std::string_view value) const = 0;
  // Objects with `value` under `name`, in key order.
  virtual StatusOr<std::vector<ObjectPtr>> ByIndex(std::string_view name,
                                                   std::string_view value) const = 0;
  // Streaming ByIndex. An unknown index yields an iterator whose status()
  // is NotFound.
  virtual std::unique_ptr<ObjectIterator> NewIndexIterator(std::string_view name,
                                                           std::string_view value) const = 0;
  // Every value present under `name`, sorted; empty for an unknown index.
  virtual StatusOr<std::vector<std::string>> ListIndexFuncValues(std::string_view name) const = 0;

  virtual Indexers GetIndexers() const = 0;
  // Adds indexes and builds them over the objects already stored.
  // InvalidArgument "indexer conflict: <names>" if a name is taken; then
  // nothing is added.
  virtual Status AddIndexers(const Indexers& indexers) = 0;
};

struct KCACHE_EXPORT MemoryIndexerOptions {
  // Default: MetaNamespaceKeyFunc.
  KeyFunc key_func = MetaNamespaceKeyFunc;
  // Indexes to maintain besides the namespace index. Default: none.
  Indexers indexers{};
  // Maintain kNamespaceIndex (MetaNamespaceIndexFunc) unless `indexers`
  // defines that name itself. Default: true.
  bool namespace_index = true;
  // Maintain kLabelIndex. Default: false (a scan of memory is cheap).
  bool label_index = false;
};

// A thread-safe in-memory Indexer (client-go's NewIndexer over a
// ThreadSafeStore). Shared, like every Indexer: listers and informers keep
// it.
KCACHE_EXPORT std::shared_ptr<Indexer> NewMemoryIndexer(MemoryIndexerOptions options = {});

}  // namespace kcache

#endif  // KCACHE_INDEXER_H_
