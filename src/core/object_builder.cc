// SPDX-License-Identifier: Apache-2.0

#include "kcache/object_builder.h"

#include "core/json_text.h"
#include "util/strings.h"

namespace kcache {
namespace {

using json::Dump;

// The value at `path` under `doc`, made (as objects) where absent or not an
// object.
nlohmann::json& At(nlohmann::json& doc, const std::vector<std::string>& path) {
  nlohmann::json* at = &doc;
  for (const std::string& key : path) {
    if (!at->is_object()) *at = nlohmann::json::object();
    at = &(*at)[key];
  }
  return *at;
}

nlohmann::json OwnerJson(const OwnerReference& o) {
  nlohmann::json j = {
      {"apiVersion", o.api_version}, {"kind", o.kind}, {"name", o.name}, {"uid", o.uid}};
  if (o.controller) j["controller"] = true;
  if (o.block_owner_deletion) j["blockOwnerDeletion"] = true;
  return j;
}

StatusOr<ObjectPtr> WithMap(const Object& object, const char* field, const Labels& set,
                            const std::vector<std::string>& remove) {
  KCACHE_ASSIGN_OR_RETURN(nlohmann::json doc, object.Document());
  auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object()) {
    return Status::InvalidArgument("the object has no metadata");
  }
  nlohmann::json& map = (*meta)[field];
  if (!map.is_object()) map = nlohmann::json::object();
  for (const auto& [key, value] : set) map[key] = value;
  for (const std::string& key : remove) map.erase(key);
  if (map.empty()) meta->erase(field);
  return Object::Parse(Dump(doc));
}

}  // namespace

FieldPath::FieldPath(std::string_view dotted) {
  for (std::string_view key : Split(dotted, '.')) keys_.emplace_back(key);
}

ObjectBuilder::ObjectBuilder(std::string api_version, std::string kind)
    : doc_({{"apiVersion", std::move(api_version)},
            {"kind", std::move(kind)},
            {"metadata", nlohmann::json::object()}}) {}

ObjectBuilder& ObjectBuilder::Name(std::string name) {
  return Set({"metadata", "name"}, std::move(name));
}

ObjectBuilder& ObjectBuilder::GenerateName(std::string prefix) {
  return Set({"metadata", "generateName"}, std::move(prefix));
}

ObjectBuilder& ObjectBuilder::Namespace(std::string namespace_) {
  return Set({"metadata", "namespace"}, std::move(namespace_));
}

ObjectBuilder& ObjectBuilder::Label(const std::string& key, std::string value) {
  return Set({"metadata", "labels", key}, std::move(value));
}

ObjectBuilder& ObjectBuilder::Annotation(const std::string& key, std::string value) {
  return Set({"metadata", "annotations", key}, std::move(value));
}

ObjectBuilder& ObjectBuilder::Owner(const OwnerReference& owner) {
  nlohmann::json& refs = At(doc_, {"metadata", "ownerReferences"});
  if (!refs.is_array()) refs = nlohmann::json::array();
  refs.push_back(OwnerJson(owner));
  return *this;
}

ObjectBuilder& ObjectBuilder::Set(const FieldPath& path, nlohmann::json value) {
  At(doc_, path.keys()) = std::move(value);
  return *this;
}

std::string ObjectBuilder::Json() const { return Dump(doc_); }

StatusOr<ObjectPtr> ObjectBuilder::Build() const { return Object::Parse(Json()); }

MergePatch& MergePatch::Set(const FieldPath& path, nlohmann::json value) {
  At(doc_, path.keys()) = std::move(value);
  return *this;
}

MergePatch& MergePatch::Remove(const FieldPath& path) { return Set(path, nullptr); }

MergePatch& MergePatch::SetLabel(const std::string& key, std::string value) {
  return Set({"metadata", "labels", key}, std::move(value));
}

MergePatch& MergePatch::RemoveLabel(const std::string& key) {
  return Remove({"metadata", "labels", key});
}

MergePatch& MergePatch::SetAnnotation(const std::string& key, std::string value) {
  return Set({"metadata", "annotations", key}, std::move(value));
}

MergePatch& MergePatch::RemoveAnnotation(const std::string& key) {
  return Remove({"metadata", "annotations", key});
}

MergePatch& MergePatch::IfResourceVersion(std::string resource_version) {
  return Set({"metadata", "resourceVersion"}, std::move(resource_version));
}

std::string MergePatch::Json() const { return Dump(doc_); }

StatusOr<ObjectPtr> WithLabels(const Object& object, const Labels& set,
                               const std::vector<std::string>& remove) {
  return WithMap(object, "labels", set, remove);
}

StatusOr<ObjectPtr> WithAnnotations(const Object& object, const Labels& set,
                                    const std::vector<std::string>& remove) {
  return WithMap(object, "annotations", set, remove);
}

}  // namespace kcache
