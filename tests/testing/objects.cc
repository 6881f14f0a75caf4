// SPDX-License-Identifier: Apache-2.0

#include "testing/objects.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kcache::testing {

ObjectPtr MakeObject(const std::string& json) {
  StatusOr<ObjectPtr> obj = Object::Parse(json);
  if (!obj.ok()) {
    ADD_FAILURE() << "cannot parse test object: " << obj.status() << "\n" << json;
    return nullptr;
  }
  return *obj;
}

ObjectPtr Pod(const std::string& name, const std::string& ns, const std::string& rv,
              const Labels& labels, const Labels& annotations) {
  nlohmann::json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  if (!rv.empty()) meta["resourceVersion"] = rv;
  if (!labels.empty()) meta["labels"] = labels;
  if (!annotations.empty()) meta["annotations"] = annotations;
  nlohmann::json doc = {{"kind", "Pod"}, {"apiVersion", "v1"}, {"metadata", meta}};
  return MakeObject(doc.dump());
}

ObjectPtr TO(const std::string& id, const std::string& val) {
  nlohmann::json doc = {{"metadata", {{"name", id}, {"annotations", {{"val", val}}}}}};
  return MakeObject(doc.dump());
}

StatusOr<std::string> KeyTO(const Object& obj) { return obj.name(); }

StatusOr<std::vector<std::string>> ByNode(const Object& obj) {
  auto it = obj.meta().annotations.find("node");
  if (it == obj.meta().annotations.end()) return std::vector<std::string>{};
  return std::vector<std::string>{it->second};
}

KeyspaceOptions ByNodeOptions() {
  KeyspaceOptions o;
  o.indexers["by-node"] = ByNode;
  o.index_versions["by-node"] = "by-node@1";
  return o;
}

StatusOr<std::vector<std::string>> ByVal(const Object& obj) {
  auto it = obj.annotations().find("val");
  if (it == obj.annotations().end()) return std::vector<std::string>{};
  return std::vector<std::string>{it->second};
}

std::vector<std::string> Names(const std::vector<ObjectPtr>& objects) {
  std::vector<std::string> out;
  for (const ObjectPtr& o : objects) out.push_back(o->name());
  return out;
}

void MakePodCache(const std::string& dir, int n) {
  auto cache = Cache::Open(dir);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  auto pods = (*cache)->OpenKeyspace("pods");
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  for (int i = 0; i < n; ++i) {
    Status st = (*pods)->Add(Pod("p" + std::to_string(i), "ns", std::to_string(i + 1)));
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
}

}  // namespace kcache::testing
