// SPDX-License-Identifier: Apache-2.0

// The JSON a controller writes: a new object (ObjectBuilder) and a JSON
// merge patch (MergePatch, RFC 7386, for RestClient::Patch with
// PatchType::kMerge), without spelling nested JSON by hand; and copies of an
// object with labels or annotations changed.
//
// Paths are lists of keys ({"data", "app.conf"}), since label and
// annotation keys hold dots and slashes; a dotted string ("spec.replicas")
// is split on dots. Objects on a path are created as needed.
//
// Thread-safety: builders are values used by one thread; the functions
// read immutable objects.

#ifndef KCACHE_OBJECT_BUILDER_H_
#define KCACHE_OBJECT_BUILDER_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/export.h"
#include "kcache/labels.h"
#include "kcache/object.h"
#include "kcache/status_or.h"

namespace kcache {

// A path of keys; from a dotted string or a list.
class KCACHE_EXPORT FieldPath {
 public:
  FieldPath(const char* dotted) : FieldPath(std::string_view(dotted)) {}  // NOLINT: implicit
  FieldPath(std::string_view dotted);                                     // NOLINT: implicit
  FieldPath(std::initializer_list<std::string> keys) : keys_(keys) {}
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  std::vector<std::string> keys_;
};

class KCACHE_EXPORT ObjectBuilder {
 public:
  ObjectBuilder(std::string api_version, std::string kind);

  ObjectBuilder& Name(std::string name);
  ObjectBuilder& GenerateName(std::string prefix);
  ObjectBuilder& Namespace(std::string namespace_);
  ObjectBuilder& Label(const std::string& key, std::string value);
  ObjectBuilder& Annotation(const std::string& key, std::string value);
  // Appended to metadata.ownerReferences (NewControllerRef in owner.h).
  ObjectBuilder& Owner(const OwnerReference& owner);
  // Sets any other field: Set("spec.replicas", 3), Set({"data", "a.conf"}, "x").
  ObjectBuilder& Set(const FieldPath& path, nlohmann::json value);

  // The JSON to send (RestClient::Create).
  std::string Json() const;
  // The same, parsed. InvalidArgument if it is no valid object (a Set that
  // replaced "metadata" with a string).
  StatusOr<ObjectPtr> Build() const;

 private:
  nlohmann::json doc_;
};

class KCACHE_EXPORT MergePatch {
 public:
  MergePatch& Set(const FieldPath& path, nlohmann::json value);
  // Removes the field: a null in the patch.
  MergePatch& Remove(const FieldPath& path);
  MergePatch& SetLabel(const std::string& key, std::string value);
  MergePatch& RemoveLabel(const std::string& key);
  MergePatch& SetAnnotation(const std::string& key, std::string value);
  MergePatch& RemoveAnnotation(const std::string& key);
  // Makes the patch conditional: the server answers Conflict (409) unless
  // the object is still at `resource_version`.
  MergePatch& IfResourceVersion(std::string resource_version);

  bool empty() const { return doc_.empty(); }
  // The patch body; "{}" when empty.
  std::string Json() const;

 private:
  nlohmann::json doc_ = nlohmann::json::object();
};

// Copies of `object` with `set` added (or replaced) and the keys in
// `remove` removed, as a client would Update them. Costs one full parse of
// the object; InvalidArgument for an object without metadata.
KCACHE_EXPORT StatusOr<ObjectPtr> WithLabels(const Object& object, const Labels& set,
                                             const std::vector<std::string>& remove = {});
KCACHE_EXPORT StatusOr<ObjectPtr> WithAnnotations(const Object& object, const Labels& set,
                                                  const std::vector<std::string>& remove = {});

}  // namespace kcache

#endif  // KCACHE_OBJECT_BUILDER_H_
