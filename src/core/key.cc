// SPDX-License-Identifier: Apache-2.0

#include "kcache/key.h"

namespace kcache {

std::string ObjectName::String() const {
  if (namespace_.empty()) return name;
  return namespace_ + "/" + name;
}

StatusOr<ObjectName> ObjectToName(const Object& object) {
  if (!object.has_metadata()) return Status::InvalidArgument("object has no meta");
  return ObjectName{object.namespace_(), object.name()};
}

StatusOr<std::string> MetaNamespaceKeyFunc(const Object& object) {
  KCACHE_ASSIGN_OR_RETURN(ObjectName name, ObjectToName(object));
  return name.String();
}

StatusOr<ObjectName> SplitMetaNamespaceKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return ObjectName{"", std::string(key)};
  if (key.find('/', slash + 1) != std::string_view::npos) {
    return Status::InvalidArgument("unexpected key format: \"" + std::string(key) + "\"");
  }
  return ObjectName{std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

StatusOr<std::string> DeletionHandlingMetaNamespaceKeyFunc(const DeletedObject& obj) {
  if (const auto* tomb = std::get_if<DeletedFinalStateUnknown>(&obj)) return tomb->key;
  const ObjectPtr& o = std::get<ObjectPtr>(obj);
  if (!o) return Status::InvalidArgument("object has no meta: null object");
  return MetaNamespaceKeyFunc(*o);
}

StatusOr<ObjectName> DeletionHandlingObjectToName(const DeletedObject& obj) {
  if (const auto* tomb = std::get_if<DeletedFinalStateUnknown>(&obj)) {
    return SplitMetaNamespaceKey(tomb->key);
  }
  const ObjectPtr& o = std::get<ObjectPtr>(obj);
  if (!o) return Status::InvalidArgument("object has no meta: null object");
  return ObjectToName(*o);
}

}  // namespace kcache
