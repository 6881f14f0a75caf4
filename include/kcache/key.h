// SPDX-License-Identifier: Apache-2.0

// Keys: how an object is named in a store ("namespace/name", or "name" for
// cluster-scoped objects), and tombstones for deletions whose final state
// was not observed.
//
// Thread-safety: plain functions and values.

#ifndef KCACHE_KEY_H_
#define KCACHE_KEY_H_

#include <functional>
#include <string>
#include <string_view>
#include <variant>

#include "kcache/export.h"
#include "kcache/object.h"
#include "kcache/status_or.h"

namespace kcache {

// A namespace and a name; the namespace is empty for cluster-scoped objects.
struct KCACHE_EXPORT ObjectName {
  std::string namespace_{};
  std::string name{};

  // "namespace/name", or "name" when the namespace is empty.
  std::string String() const;
  friend bool operator==(const ObjectName&, const ObjectName&) = default;
};

// Computes the key of an object in a store.
using KeyFunc = std::function<StatusOr<std::string>(const Object&)>;

// "namespace/name", or "name" for an object without a namespace.
// InvalidArgument "object has no meta" if the object has no metadata.
KCACHE_EXPORT StatusOr<std::string> MetaNamespaceKeyFunc(const Object& object);

// The ObjectName of an object; same error as MetaNamespaceKeyFunc.
KCACHE_EXPORT StatusOr<ObjectName> ObjectToName(const Object& object);

// Splits "namespace/name" or "name". InvalidArgument
// `unexpected key format: "<key>"` for a key with more than one '/'.
KCACHE_EXPORT StatusOr<ObjectName> SplitMetaNamespaceKey(std::string_view key);

// An object that was deleted while the watch was not looking: the last known
// state (possibly null) under the key it was stored with. Informers hand it
// to delete handlers when a relist finds an object gone.
struct KCACHE_EXPORT DeletedFinalStateUnknown {
  std::string key{};
  ObjectPtr obj{};  // may be null
};

// What a delete notification carries: the deleted object, or a tombstone.
using DeletedObject = std::variant<ObjectPtr, DeletedFinalStateUnknown>;

// The tombstone's key for a tombstone, else MetaNamespaceKeyFunc.
KCACHE_EXPORT StatusOr<std::string> DeletionHandlingMetaNamespaceKeyFunc(const DeletedObject& obj);

// The tombstone key split, for a tombstone; else ObjectToName.
KCACHE_EXPORT StatusOr<ObjectName> DeletionHandlingObjectToName(const DeletedObject& obj);

}  // namespace kcache

#endif  // KCACHE_KEY_H_
