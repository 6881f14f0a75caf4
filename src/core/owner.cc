// SPDX-License-Identifier: Apache-2.0

#include "kcache/owner.h"

namespace kcache {

OwnerReference NewControllerRef(const Object& owner, std::string api_version, std::string kind) {
  OwnerReference ref;
  ref.api_version = api_version.empty() ? owner.api_version() : std::move(api_version);
  ref.kind = kind.empty() ? owner.kind() : std::move(kind);
  ref.name = owner.name();
  ref.uid = owner.meta().uid;
  ref.controller = true;
  ref.block_owner_deletion = true;
  return ref;
}

const OwnerReference* GetControllerOf(const Object& object) {
  for (const OwnerReference& ref : object.meta().owner_references) {
    if (ref.controller) return &ref;
  }
  return nullptr;
}

bool IsControlledBy(const Object& object, const Object& owner) {
  const OwnerReference* ref = GetControllerOf(object);
  return ref && !ref->uid.empty() && ref->uid == owner.meta().uid;
}

std::vector<OwnerReference> OwnersOfKind(const Object& object, std::string_view kind) {
  std::vector<OwnerReference> out;
  for (const OwnerReference& ref : object.meta().owner_references) {
    if (ref.kind == kind) out.push_back(ref);
  }
  return out;
}

}  // namespace kcache
