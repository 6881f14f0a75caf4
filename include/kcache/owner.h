// SPDX-License-Identifier: Apache-2.0

// Owner references as controllers use them (client-go's metav1
// NewControllerRef, GetControllerOf, IsControlledBy), read from the
// metadata Object::Parse extracted once: no call here parses an object.
//
// Thread-safety: plain functions of immutable objects.

#ifndef KCACHE_OWNER_H_
#define KCACHE_OWNER_H_

#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/object.h"

namespace kcache {

// A reference to `owner` as the controller of a dependent: its apiVersion,
// kind, name and uid, with controller and blockOwnerDeletion true.
// `api_version` and `kind` name the owner's type, as client-go takes its
// GroupVersionKind; empty ones are taken from the object (a server's list
// items carry neither unless the informer filled them in).
KCACHE_EXPORT OwnerReference NewControllerRef(const Object& owner, std::string api_version = "",
                                              std::string kind = "");

// The reference with controller true; null if there is none. Valid as long
// as `object` lives.
KCACHE_EXPORT const OwnerReference* GetControllerOf(const Object& object);

// Whether `object`'s controller is `owner` (by uid, as client-go compares).
KCACHE_EXPORT bool IsControlledBy(const Object& object, const Object& owner);

// The references to owners of `kind` ("ReplicaSet"), controller or not, in
// their order.
KCACHE_EXPORT std::vector<OwnerReference> OwnersOfKind(const Object& object, std::string_view kind);

}  // namespace kcache

#endif  // KCACHE_OWNER_H_
