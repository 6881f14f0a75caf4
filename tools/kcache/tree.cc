// SPDX-License-Identifier: Apache-2.0

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <ostream>
#include <set>

#include "kcache/lister.h"
#include "tools/kcache/command.h"
#include "tools/kcache/inspect.h"
#include "tools/kcache/kubectl/printers.h"
#include "tools/kcache/source.h"

namespace kcache::tool {
namespace {

struct Node {
  std::string keyspace;
  ObjectPtr object;
};

// The keyspace that holds objects of `kind` in API group `group`: as
// recorded by the sync, else the lower-case plural kubectl would guess.
std::string KeyspaceForKind(const Source& source, const std::string& api_version,
                            const std::string& kind) {
  std::string group = api_version.find('/') == std::string::npos
                          ? ""
                          : api_version.substr(0, api_version.find('/'));
  for (const KeyspaceStats& ks : source.keyspaces()) {
    if (ks.resource && ks.resource->kind == kind && ks.resource->group == group) return ks.name;
  }
  std::string plural = kind;
  std::transform(plural.begin(), plural.end(), plural.begin(), ::tolower);
  plural += plural.ends_with("s") ? "es" : (plural.ends_with("y") ? "" : "s");
  if (plural.ends_with("y")) plural = plural.substr(0, plural.size() - 1) + "ies";
  return group.empty() ? plural : plural + "." + group;
}

std::string Label(const Object& o) { return o.kind() + "/" + o.name(); }

}  // namespace

Status RunTree(const TreeOptions& options, std::ostream& out) {
  if (options.resource.empty() || options.name.empty())
    return Status::InvalidArgument("name a resource type and an object, e.g. pods web-0");
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> source,
                          Source::Open(options.cache_dir, options.snapshot));
  KCACHE_ASSIGN_OR_RETURN(std::string ks, source->Resolve(options.resource));
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> indexer, source->Keyspace(ks));
  const bool namespaced = source->Namespaced(ks);
  const std::string ns = namespaced ? options.namespace_ : "";
  KCACHE_ASSIGN_OR_RETURN(ObjectPtr start,
                          indexer->GetByKey(ns.empty() ? options.name : ns + "/" + options.name));
  if (!start) return Status::NotFound(ks + " \"" + options.name + "\" not found");

  // Owners, up to the top: the controller reference first, as kubectl
  // describe names "Controlled By".
  std::vector<std::string> missing;  // an owner the cache does not hold
  std::vector<Node> chain = {{ks, start}};
  std::set<std::string> seen = {start->meta().uid};
  while (chain.size() < 32) {
    const auto& refs = chain.back().object->meta().owner_references;
    if (refs.empty()) break;
    const OwnerReference* ref = &refs.front();
    for (const OwnerReference& r : refs) {
      if (r.controller) ref = &r;
    }
    std::string owner_ks = KeyspaceForKind(*source, ref->api_version, ref->kind);
    ObjectPtr owner;
    if (std::find_if(source->keyspaces().begin(), source->keyspaces().end(),
                     [&](const KeyspaceStats& k) { return k.name == owner_ks; }) !=
        source->keyspaces().end()) {
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> owners, source->Keyspace(owner_ks));
      const std::string owner_ns =
          source->Namespaced(owner_ks) ? chain.back().object->namespace_() : "";
      KCACHE_ASSIGN_OR_RETURN(
          owner, owners->GetByKey(owner_ns.empty() ? ref->name : owner_ns + "/" + ref->name));
    }
    if (!owner || owner->meta().uid != ref->uid) {
      missing.push_back(ref->kind + "/" + ref->name);
      break;
    }
    if (!seen.insert(owner->meta().uid).second) break;  // a cycle
    chain.push_back({owner_ks, owner});
  }

  // Dependents: every object of the same namespace (or of every namespace,
  // for a cluster-scoped object) that names an owner by uid.
  std::map<std::string, std::vector<ObjectPtr>> children;  // owner uid -> dependents
  for (const KeyspaceStats& k : source->keyspaces()) {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> store, source->Keyspace(k.name));
    const std::string scan_ns = source->Namespaced(k.name) ? ns : "";
    KCACHE_RETURN_IF_ERROR(
        ListAllByNamespace(*store, scan_ns, LabelSelector::Everything(), [&](const ObjectPtr& o) {
          for (const OwnerReference& r : o->meta().owner_references) children[r.uid].push_back(o);
          return true;
        }));
  }

  auto now = std::chrono::system_clock::now();
  std::vector<std::vector<std::string>> rows = {{"NAMESPACE", "NAME", "AGE"}};
  // Depth d > 0 hangs under the row above it.
  int depth = 0;
  auto connector = [](int d) {
    return d == 0 ? std::string() : std::string(2 * (d - 1), ' ') + "└─";
  };
  for (const std::string& m : missing)
    rows.push_back({ns, connector(depth++) + m + " (not in the cache)", ""});
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    rows.push_back({it->object->namespace_(), connector(depth++) + Label(*it->object),
                    Age(it->object->meta().creation_timestamp, now)});
  }
  // Below the object: its dependents, depth first.
  std::set<std::string> printed(seen);
  std::function<void(const Object&, const std::string&)> below = [&](const Object& o,
                                                                     const std::string& prefix) {
    auto c = children.find(o.meta().uid);
    if (c == children.end()) return;
    std::vector<ObjectPtr> kids = c->second;
    std::sort(kids.begin(), kids.end(),
              [](const ObjectPtr& a, const ObjectPtr& b) { return Label(*a) < Label(*b); });
    for (size_t i = 0; i < kids.size(); ++i) {
      if (!printed.insert(kids[i]->meta().uid).second) continue;
      bool last = i + 1 == kids.size();
      rows.push_back({kids[i]->namespace_(), prefix + (last ? "└─" : "├─") + Label(*kids[i]),
                      Age(kids[i]->meta().creation_timestamp, now)});
      below(*kids[i], prefix + (last ? "  " : "│ "));
    }
  };
  below(*start, std::string(2 * (depth - 1), ' '));
  PrintTable(rows, out);
  return Status::OK();
}

namespace {

int TreeMain(const Command& self, const std::vector<std::string>& args) {
  TreeOptions o;
  cli::FlagSet flags;
  SourceFlags(flags, &o.cache_dir, &o.snapshot);
  flags.String("namespace", 'n', &o.namespace_, "the object's namespace");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(self, flags, args, &positional); rc >= 0) return rc;
  if (positional.size() != 2) {
    return Fail(Status::InvalidArgument(
                    "name a resource type and an object, e.g. kcache tree deployments web"),
                "tree");
  }
  o.resource = positional[0];
  o.name = positional[1];
  Status st = RunTree(o, std::cout);
  return st.ok() ? 0 : Fail(st, "tree");
}

}  // namespace

const Command kTreeCommand = {
    "tree",
    "tree TYPE NAME (--cache DIR | --snapshot FILE) [-n NAMESPACE]",
    "an object's owners and dependents (ownerReferences)",
    "An object's owners and dependents, following ownerReferences across the resources the "
    "cache holds.",
    "  # What owns a pod, and what it owns\n"
    "  kcache tree pod web-7d4b9-x2k8p -n prod --cache /var/lib/kcache\n"
    "  kcache tree deployment web -n prod --snapshot before.kcs\n",
    TreeMain};

}  // namespace kcache::tool
