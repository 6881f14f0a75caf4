#include "tool/get.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "kcache/field_selector.h"
#include "kcache/label_selector.h"
#include "kcache/lister.h"

namespace kcache::tool {
namespace {

// kubectl's short names for the common built-in resources.
const std::map<std::string, std::string>& ShortNames() {
  static const std::map<std::string, std::string> m = {
      {"po", "pods"},           {"cm", "configmaps"},      {"ns", "namespaces"},
      {"no", "nodes"},          {"svc", "services"},       {"deploy", "deployments.apps"},
      {"rs", "replicasets.apps"}, {"sts", "statefulsets.apps"}, {"ds", "daemonsets.apps"},
      {"sa", "serviceaccounts"}, {"ep", "endpoints"},      {"secret", "secrets"}};
  return m;
}

// The keyspace `name` means: itself, its plural, its short name, or a
// keyspace whose resource part is one of those.
StatusOr<std::string> ResolveKeyspace(const std::vector<std::string>& keyspaces, std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  if (auto s = ShortNames().find(name); s != ShortNames().end()) name = s->second;
  for (const std::string& candidate : {name, name + "s", name + "es"}) {
    for (const std::string& ks : keyspaces) {
      if (ks == candidate || ks.substr(0, ks.find('.')) == candidate) return ks;
    }
  }
  std::string have;
  for (const std::string& ks : keyspaces) have += (have.empty() ? "" : ", ") + ks;
  return Status::NotFound("the cache has no resource type \"" + name + "\" (it has: " +
                          (have.empty() ? "nothing yet" : have) + ")");
}

std::string KindPath(const Object& o) {
  std::string kind = o.kind();
  std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
  const std::string& av = o.api_version();
  size_t slash = av.find('/');
  if (slash != std::string::npos) kind += "." + av.substr(0, slash);
  return kind;
}

std::string Age(const std::string& created) {
  std::tm tm{};
  if (created.empty() || !strptime(created.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return "<unknown>";
  int64_t secs = static_cast<int64_t>(std::time(nullptr) - timegm(&tm));
  if (secs < 0) secs = 0;
  if (secs < 120) return std::to_string(secs) + "s";
  if (secs < 7200) return std::to_string(secs / 60) + "m";
  if (secs < 172800) return std::to_string(secs / 3600) + "h";
  return std::to_string(secs / 86400) + "d";
}

}  // namespace

Status RunGet(const GetOptions& options, std::ostream& out) {
  if (options.cache_dir.empty()) return Status::InvalidArgument("--cache DIR is required");
  if (options.output != "" && options.output != "json" && options.output != "name") {
    return Status::InvalidArgument("unable to match a printer suitable for the output format \"" + options.output +
                                   "\", allowed formats are: json,name");
  }
  CacheOptions co;
  co.create_if_missing = false;
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Cache> cache, Cache::OpenReadOnly(options.cache_dir, co));
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> keyspaces, cache->ListKeyspaces());
  KCACHE_ASSIGN_OR_RETURN(std::string ks, ResolveKeyspace(keyspaces, options.resource));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, cache->OpenKeyspace(ks));
  KCACHE_ASSIGN_OR_RETURN(LabelSelector labels, LabelSelector::Parse(options.label_selector));
  KCACHE_ASSIGN_OR_RETURN(FieldSelector fields, FieldSelector::Parse(options.field_selector));
  GroupResource gr{ks.find('.') == std::string::npos ? "" : ks.substr(ks.find('.') + 1), ks.substr(0, ks.find('.'))};

  // Cluster-scoped keyspaces have keys without a namespace.
  bool namespaced = true;
  {
    auto it = indexer->NewIterator();
    if (it->Valid()) namespaced = it->key().find('/') != std::string::npos;
  }
  const std::string ns = options.all_namespaces || !namespaced ? "" : options.namespace_;

  std::vector<ObjectPtr> objects;
  if (!options.name.empty()) {
    std::string key = ns.empty() ? options.name : ns + "/" + options.name;
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr o, indexer->GetByKey(key));
    if (!o) return Status::NotFound(gr.String() + " \"" + options.name + "\" not found");
    objects.push_back(std::move(o));
  } else {
    KCACHE_RETURN_IF_ERROR(ListAllByNamespace(*indexer, ns, labels, [&](const ObjectPtr& o) {
      if (fields.Matches(*o)) objects.push_back(o);
      return true;
    }));
  }

  if (options.output == "name") {
    for (const ObjectPtr& o : objects) out << KindPath(*o) << "/" << o->name() << "\n";
  } else if (options.output == "json") {
    nlohmann::json doc;
    if (!options.name.empty()) {
      KCACHE_ASSIGN_OR_RETURN(doc, objects[0]->Document());
    } else {
      doc = {{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", {{"resourceVersion", ""}}}};
      doc["items"] = nlohmann::json::array();
      for (const ObjectPtr& o : objects) {
        KCACHE_ASSIGN_OR_RETURN(nlohmann::json item, o->Document());
        doc["items"].push_back(std::move(item));
      }
    }
    out << doc.dump(4) << "\n";
  } else {
    if (objects.empty()) {
      out << (ns.empty() ? "No resources found\n" : "No resources found in " + ns + " namespace.\n");
      return Status::OK();
    }
    bool show_ns = ns.empty() && namespaced;
    size_t width = 4;
    for (const ObjectPtr& o : objects) width = std::max(width, o->name().size());
    size_t ns_width = 9;
    for (const ObjectPtr& o : objects) ns_width = std::max(ns_width, o->namespace_().size());
    auto pad = [](const std::string& s, size_t w) { return s + std::string(w + 3 - s.size(), ' '); };
    if (show_ns) out << pad("NAMESPACE", ns_width);
    out << pad("NAME", width) << "AGE\n";
    for (const ObjectPtr& o : objects) {
      if (show_ns) out << pad(o->namespace_(), ns_width);
      out << pad(o->name(), width) << Age(o->meta().creation_timestamp) << "\n";
    }
  }
  return Status::OK();
}

}  // namespace kcache::tool
