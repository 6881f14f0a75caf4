// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/strategic_merge.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::serve {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeletePrefix = "$deleteFromPrimitiveList/";

// The merge key of a list of objects, by field name, from the patch tags
// of the built-in types' Go structs (core/v1 and meta/v1); "" for a list
// that is replaced.
std::string MergeKey(const std::string& field) {
  static const std::map<std::string, std::string> kKeys = {
      {"containers", "name"},          {"initContainers", "name"},
      {"ephemeralContainers", "name"}, {"env", "name"},
      {"ports", "containerPort"},      {"volumes", "name"},
      {"volumeMounts", "mountPath"},   {"volumeDevices", "devicePath"},
      {"imagePullSecrets", "name"},    {"hostAliases", "ip"},
      {"conditions", "type"},          {"ownerReferences", "uid"},
      {"addresses", "type"},           {"taints", "key"},
  };
  auto it = kKeys.find(field);
  return it == kKeys.end() ? "" : it->second;
}

// Primitive lists with the merge strategy: merged as sets.
bool MergesAsSet(const std::string& field) { return field == "finalizers"; }

bool IsDirective(const std::string& key) { return !key.empty() && key[0] == '$'; }

ojson WithoutDirectives(const ojson& v) {
  if (v.is_object()) {
    ojson out = ojson::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!IsDirective(it.key())) out[it.key()] = WithoutDirectives(it.value());
    }
    return out;
  }
  if (v.is_array()) {
    ojson out = ojson::array();
    for (const ojson& e : v) {
      if (e.is_object() && e.contains("$patch")) continue;  // list-level directives
      out.push_back(WithoutDirectives(e));
    }
    return out;
  }
  return v;
}

StatusOr<ojson> MergeMap(const ojson& target, const ojson& patch);

// Orders `list` as `order` lists its elements (by merge key, or as values);
// the elements it does not name follow, in their order.
ojson Ordered(const ojson& list, const ojson& order, const std::string& key) {
  if (!order.is_array()) return list;
  auto id = [&](const ojson& e) -> ojson {
    return key.empty() ? e : (e.is_object() ? e.value(key, ojson()) : ojson());
  };
  ojson out = ojson::array();
  std::vector<bool> taken(list.size(), false);
  for (const ojson& o : order) {
    const ojson want = key.empty() ? o : (o.is_object() ? o.value(key, ojson()) : ojson());
    for (size_t i = 0; i < list.size(); ++i) {
      if (!taken[i] && id(list[i]) == want) {
        out.push_back(list[i]);
        taken[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!taken[i]) out.push_back(list[i]);
  }
  return out;
}

StatusOr<ojson> MergeList(const std::string& field, const ojson& target, const ojson& patch) {
  const std::string key = MergeKey(field);
  for (const ojson& e : patch) {
    if (e.is_object() && e.value("$patch", "") == "replace") return WithoutDirectives(patch);
  }
  if (MergesAsSet(field)) {
    ojson out = target.is_array() ? target : ojson::array();
    for (const ojson& e : patch) {
      if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
    }
    return out;
  }
  if (key.empty() || !target.is_array()) return WithoutDirectives(patch);
  ojson out = target;
  for (const ojson& e : patch) {
    if (!e.is_object() || !e.contains(key)) {
      return Status::InvalidArgument("map: " + e.dump() +
                                     " does not contain declared merge key: " + key);
    }
    auto same = [&](const ojson& t) { return t.is_object() && t.value(key, ojson()) == e[key]; };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (e.value("$patch", "") == "delete") {
      if (it != out.end()) out.erase(it);
      continue;
    }
    if (it == out.end()) {
      out.push_back(WithoutDirectives(e));
    } else {
      KCACHE_ASSIGN_OR_RETURN(*it, MergeMap(*it, e));
    }
  }
  return out;
}

StatusOr<ojson> MergeMap(const ojson& target, const ojson& patch) {
  const std::string directive = patch.value("$patch", "");
  if (directive == "replace") return WithoutDirectives(patch);
  if (!directive.empty() && directive != "merge" && directive != "delete") {
    return Status::InvalidArgument("unknown patch type: " + directive + " in map: " + patch.dump());
  }
  ojson out = target.is_object() ? target : ojson::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    const ojson& v = it.value();
    if (IsDirective(k)) continue;
    if (v.is_null()) {
      out.erase(k);
    } else if (v.is_object() && v.value("$patch", "") == "delete") {
      out.erase(k);
    } else if (v.is_object()) {
      KCACHE_ASSIGN_OR_RETURN(out[k], MergeMap(out.value(k, ojson::object()), v));
    } else if (v.is_array()) {
      KCACHE_ASSIGN_OR_RETURN(out[k], MergeList(k, out.value(k, ojson()), v));
    } else {
      out[k] = v;
    }
  }
  // Directives about this map's fields, after the fields' own changes.
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    if (k.rfind(kDeletePrefix, 0) == 0) {
      const std::string field = k.substr(kDeletePrefix.size());
      if (!out.contains(field) || !out[field].is_array() || !it.value().is_array()) continue;
      ojson kept = ojson::array();
      for (const ojson& e : out[field]) {
        if (std::find(it.value().begin(), it.value().end(), e) == it.value().end())
          kept.push_back(e);
      }
      out[field] = kept;
    } else if (k.rfind(kOrderPrefix, 0) == 0) {
      const std::string field = k.substr(kOrderPrefix.size());
      if (out.contains(field) && out[field].is_array())
        out[field] = Ordered(out[field], it.value(), MergeKey(field));
    }
  }
  if (auto keep = patch.find("$retainKeys"); keep != patch.end() && keep->is_array()) {
    std::set<std::string> retained;
    for (const ojson& k : *keep) {
      if (k.is_string()) retained.insert(k.get<std::string>());
    }
    for (auto it = out.begin(); it != out.end();) {
      it = retained.count(it.key()) ? std::next(it) : out.erase(it);
    }
  }
  return out;
}

}  // namespace

StatusOr<ojson> StrategicMerge(const ojson& target, const ojson& patch) {
  if (!patch.is_object()) {
    return Status::InvalidArgument("a strategic merge patch must be a JSON object, not " +
                                   std::string(patch.type_name()));
  }
  return MergeMap(target, patch);
}

}  // namespace kcache::serve
