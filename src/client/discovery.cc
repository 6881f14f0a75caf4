// SPDX-License-Identifier: Apache-2.0

#include "kcache/discovery.h"

#include "util/strings.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace kcache {
namespace {

std::string Lower(std::string_view s) { return AsciiLower(s); }

// Appends the resources of one APIResourceList body.
Status AddResources(std::string_view body, const std::string& group, const std::string& version,
                    const std::string& path, std::vector<ApiResource>* out) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc["resources"].is_array()) {
    return Status::InvalidArgument("GET " + path + ": not an APIResourceList");
  }
  for (const auto& r : doc["resources"]) {
    if (!r.is_object()) continue;
    std::string name = r.value("name", "");
    if (name.empty() || name.find('/') != std::string::npos) continue;  // subresource
    ApiResource a;
    a.group = group;
    a.version = version;
    a.resource = name;
    a.kind = r.value("kind", "");
    a.singular = r.value("singularName", "");
    a.namespaced = r.value("namespaced", false);
    if (auto it = r.find("shortNames"); it != r.end() && it->is_array()) {
      for (const auto& s : *it) {
        if (s.is_string()) a.short_names.push_back(s.get<std::string>());
      }
    }
    if (auto it = r.find("verbs"); it != r.end() && it->is_array()) {
      for (const auto& s : *it) {
        if (s.is_string()) a.verbs.push_back(s.get<std::string>());
      }
    }
    if (auto it = r.find("categories"); it != r.end() && it->is_array()) {
      for (const auto& s : *it) {
        if (s.is_string()) a.categories.push_back(s.get<std::string>());
      }
    }
    out->push_back(std::move(a));
  }
  return Status::OK();
}

}  // namespace

bool ApiResource::Supports(std::string_view verb) const {
  return std::find(verbs.begin(), verbs.end(), verb) != verbs.end();
}

// Two round trips, however many groups: /api and /apis together, then every
// group-version's resource list together (every version of each group) (kube-apiserver before 1.26
// has no aggregated discovery, which would make it one).
StatusOr<std::shared_ptr<const Discovery>> Discovery::Fetch(RestClient& client) {
  std::vector<StatusOr<std::string>> roots = client.GetEach({"/api", "/apis"});
  KCACHE_ASSIGN_OR_RETURN(std::string api, std::move(roots[0]));
  KCACHE_ASSIGN_OR_RETURN(std::string apis, std::move(roots[1]));
  nlohmann::json versions = nlohmann::json::parse(api, nullptr, false);
  std::string core = "v1";
  if (versions.is_object() && versions["versions"].is_array() && !versions["versions"].empty() &&
      versions["versions"][0].is_string()) {
    core = versions["versions"][0].get<std::string>();
  }
  nlohmann::json groups = nlohmann::json::parse(apis, nullptr, false);
  if (!groups.is_object() || !groups["groups"].is_array()) {
    return Status::InvalidArgument("GET /apis: not an APIGroupList");
  }
  // (group, version, preferred) of each list, the core group's first. Every
  // version of a group is read, as kubectl does: a resource served only by
  // another version than the preferred one (batch/v1beta1 cronjobs in 1.20)
  // is found there.
  struct List {
    std::string group, version;
    bool preferred;
  };
  std::vector<List> lists{{"", core, true}};
  std::vector<std::string> paths{"/api/" + core};
  for (const auto& g : groups["groups"]) {
    if (!g.is_object()) continue;
    std::string name = g.value("name", "");
    std::string preferred;
    if (auto p = g.find("preferredVersion"); p != g.end() && p->is_object()) {
      preferred = p->value("version", "");
    }
    std::vector<std::string> served;
    if (g["versions"].is_array()) {
      for (const auto& v : g["versions"]) {
        if (v.is_object() && !v.value("version", "").empty()) served.push_back(v["version"]);
      }
    }
    if (preferred.empty() && !served.empty()) preferred = served.front();
    if (name.empty() || preferred.empty()) continue;
    lists.push_back({name, preferred, true});
    paths.push_back("/apis/" + name + "/" + preferred);
    for (const std::string& v : served) {
      if (v == preferred) continue;
      lists.push_back({name, v, false});
      paths.push_back("/apis/" + name + "/" + v);
    }
  }
  std::vector<StatusOr<std::string>> bodies = client.GetEach(paths);
  std::vector<ApiResource> resources;
  std::set<std::pair<std::string, std::string>> seen;  // (group, resource)
  // The preferred versions first; then what only another version serves,
  // from the first version (in the server's order) that serves it.
  for (bool preferred : {true, false}) {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (lists[i].preferred != preferred) continue;
      if (!bodies[i].ok()) {
        if (i == 0) return bodies[i].status();
        continue;  // an unavailable aggregated API hides only itself
      }
      std::vector<ApiResource> found;
      KCACHE_RETURN_IF_ERROR(
          AddResources(*bodies[i], lists[i].group, lists[i].version, paths[i], &found));
      for (ApiResource& r : found) {
        if (seen.insert({r.group, r.resource}).second) resources.push_back(std::move(r));
      }
    }
  }
  return FromResources(std::move(resources));
}

std::shared_ptr<const Discovery> Discovery::FromResources(std::vector<ApiResource> resources) {
  auto d = std::make_shared<Discovery>();
  d->resources_ = std::move(resources);
  for (size_t i = 0; i < d->resources_.size(); ++i) {
    const ApiResource& r = d->resources_[i];
    auto add = [&](std::string_view name) {
      if (name.empty()) return;
      std::vector<size_t>& named = d->by_name_[Lower(name)];
      if (named.empty() || named.back() != i) named.push_back(i);
    };
    add(r.resource);
    add(r.singular);
    add(r.kind);
    for (const std::string& s : r.short_names) add(s);
  }
  return d;
}

StatusOr<ApiResource> Discovery::Resolve(std::string_view name) const {
  const std::string lower = Lower(name);
  auto named = [&](const std::string& n) -> const std::vector<size_t>& {
    static const std::vector<size_t> kNone;
    auto it = by_name_.find(n);
    return it == by_name_.end() ? kNone : it->second;
  };
  // Try "resource", then "resource.group", then "resource.version.group".
  if (const std::vector<size_t>& hits = named(lower); !hits.empty()) return resources_[hits[0]];
  size_t dot = lower.find('.');
  if (dot != std::string::npos) {
    std::string res = lower.substr(0, dot), rest = lower.substr(dot + 1);
    const std::vector<size_t>& hits = named(res);
    for (size_t i : hits) {
      if (Lower(resources_[i].group) == rest) return resources_[i];
    }
    size_t dot2 = rest.find('.');
    std::string version = rest.substr(0, dot2);
    std::string group = dot2 == std::string::npos ? "" : rest.substr(dot2 + 1);
    for (size_t i : hits) {
      if (Lower(resources_[i].group) == group) {
        ApiResource out = resources_[i];
        out.version = version;  // a non-preferred version, as asked
        return out;
      }
    }
  }
  return Status::NotFound("the server doesn't have a resource type \"" + std::string(name) + "\"");
}

}  // namespace kcache
