// SPDX-License-Identifier: Apache-2.0

// Listers: read-only, selector-aware queries over an Indexer (client-go's
// generic listers).
//
// Lists use the namespace index when the indexer has one and fall back to a
// scan otherwise; both give the same result. Results are in key order.
//
// Thread-safety: safe for concurrent use; as safe as the Indexer beneath.

#ifndef KCACHE_LISTER_H_
#define KCACHE_LISTER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/indexer.h"
#include "kcache/label_selector.h"
#include "kcache/resource.h"

namespace kcache {

// Called for each match; return false to stop.
using ObjectVisitor = std::function<bool(const ObjectPtr&)>;

// Streams every object of `store` matching `selector` to `visit`.
KCACHE_EXPORT Status ListAll(const Store& store, const LabelSelector& selector,
                             const ObjectVisitor& visit);

// Streams the objects of `ns` ("" = all namespaces) matching `selector`.
KCACHE_EXPORT Status ListAllByNamespace(const Indexer& indexer, std::string_view ns,
                                        const LabelSelector& selector, const ObjectVisitor& visit);

class NamespaceLister;

class KCACHE_EXPORT Lister {
 public:
  Lister(std::shared_ptr<const Indexer> indexer, GroupResource resource)
      : indexer_(std::move(indexer)), resource_(std::move(resource)) {}
  // A lister that also knows the collection its objects come from (Ref).
  static Lister ForCollection(std::shared_ptr<const Indexer> indexer, ResourceRef ref) {
    Lister l(std::move(indexer), ref.gvr.group_resource());
    l.ref_ = std::move(ref);
    return l;
  }

  // Every object in every namespace matching `selector`.
  StatusOr<std::vector<ObjectPtr>> List(const LabelSelector& selector) const;
  // A cluster-scoped object by name. NotFound `<resource> "<name>" not found`.
  StatusOr<ObjectPtr> Get(std::string_view name) const;
  NamespaceLister Namespace(std::string ns) const;
  // The collection listed, if the lister was given it.
  const std::optional<ResourceRef>& Ref() const { return ref_; }

 private:
  std::shared_ptr<const Indexer> indexer_;
  GroupResource resource_;
  std::optional<ResourceRef> ref_;
};

class KCACHE_EXPORT NamespaceLister {
 public:
  StatusOr<std::vector<ObjectPtr>> List(const LabelSelector& selector) const;
  // The object `namespace/name`. NotFound `<resource> "<name>" not found`.
  StatusOr<ObjectPtr> Get(std::string_view name) const;
  // The collection in this namespace, if the lister was given it: where a
  // write to one of its objects goes.
  std::optional<ResourceRef> Ref() const {
    if (!ref_) return std::nullopt;
    return ref_->InNamespace(ns_);
  }

 private:
  friend class Lister;
  NamespaceLister(std::shared_ptr<const Indexer> indexer, GroupResource resource, std::string ns,
                  std::optional<ResourceRef> ref)
      : indexer_(std::move(indexer)),
        resource_(std::move(resource)),
        ns_(std::move(ns)),
        ref_(std::move(ref)) {}

  std::shared_ptr<const Indexer> indexer_;
  GroupResource resource_;
  std::string ns_;
  std::optional<ResourceRef> ref_;
};

}  // namespace kcache

#endif  // KCACHE_LISTER_H_
