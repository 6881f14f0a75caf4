// SPDX-License-Identifier: Apache-2.0

#include <iostream>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

#include "tools/kcache/command.h"
#include "tools/kcache/inspect.h"
#include "tools/kcache/kubectl/go_format.h"
#include "tools/kcache/kubectl/printers.h"
#include "tools/kcache/source.h"

namespace kcache::tool {
namespace {

using nlohmann::json;

std::string Step(const std::string& path, const std::string& key) {
  bool plain = !key.empty() && key.find_first_of(".[]\" ") == std::string::npos;
  return plain ? (path.empty() ? key : path + "." + key) : path + "[" + json(key).dump() + "]";
}

// A value as JSON, cut to one short line.
std::string Show(const json& v) {
  std::string s = GoJson(v);
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

// Lines describing how `b` differs from `a`, field by field.
void FieldDiff(const json& a, const json& b, const std::string& path,
               std::vector<std::string>* lines) {
  if (path == "metadata.resourceVersion" || path == "metadata.managedFields") return;
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const std::string& k : keys) {
      std::string p = Step(path, k);
      if (p == "metadata.resourceVersion" || p == "metadata.managedFields") continue;
      if (!b.contains(k)) {
        lines->push_back("- " + p + ": " + Show(a[k]));
      } else if (!a.contains(k)) {
        lines->push_back("+ " + p + ": " + Show(b[k]));
      } else {
        FieldDiff(a[k], b[k], p, lines);
      }
    }
  } else if (a.is_array() && b.is_array()) {
    size_t common = std::min(a.size(), b.size());
    for (size_t i = 0; i < common; ++i)
      FieldDiff(a[i], b[i], path + "[" + std::to_string(i) + "]", lines);
    for (size_t i = common; i < a.size(); ++i)
      lines->push_back("- " + path + "[" + std::to_string(i) + "]: " + Show(a[i]));
    for (size_t i = common; i < b.size(); ++i)
      lines->push_back("+ " + path + "[" + std::to_string(i) + "]: " + Show(b[i]));
  } else if (a != b) {
    lines->push_back("  " + path + ": " + Show(a) + " -> " + Show(b));
  }
}

struct Counts {
  uint64_t added = 0, removed = 0, changed = 0, unchanged = 0;
};

}  // namespace

StatusOr<bool> RunDiff(const DiffOptions& options, std::ostream& out) {
  if (options.from.empty() || options.to.empty()) {
    return Status::InvalidArgument(
        "name two things to compare: caches directories or snapshot files");
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> from, Source::OpenPath(options.from));
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Source> to, Source::OpenPath(options.to));
  std::set<std::string> keyspaces;
  for (const KeyspaceStats& k : from->keyspaces()) keyspaces.insert(k.name);
  for (const KeyspaceStats& k : to->keyspaces()) keyspaces.insert(k.name);
  auto has = [](const Source& s, const std::string& ks) {
    for (const KeyspaceStats& k : s.keyspaces()) {
      if (k.name == ks) return true;
    }
    return false;
  };

  out << "--- " << options.from << "\n+++ " << options.to << "\n";
  bool differ = false;
  for (const std::string& ks : keyspaces) {
    // Both sides in key order, walked side by side.
    std::unique_ptr<ObjectIterator> a, b;
    std::shared_ptr<Indexer> ia, ib;
    if (has(*from, ks)) {
      KCACHE_ASSIGN_OR_RETURN(ia, from->Keyspace(ks));
      a = ia->NewIterator();
    }
    if (has(*to, ks)) {
      KCACHE_ASSIGN_OR_RETURN(ib, to->Keyspace(ks));
      b = ib->NewIterator();
    }
    Counts n;
    std::vector<std::string> lines;
    for (;;) {
      bool va = a && a->Valid(), vb = b && b->Valid();
      if (!va && !vb) break;
      int cmp = !va ? 1 : !vb ? -1 : a->key().compare(b->key());
      if (cmp < 0) {
        ++n.removed;
        if (!options.summary_only) lines.push_back("  - " + a->key());
        a->Next();
      } else if (cmp > 0) {
        ++n.added;
        if (!options.summary_only) lines.push_back("  + " + b->key());
        b->Next();
      } else {
        const ObjectPtr &oa = a->object(), &ob = b->object();
        if (oa->resource_version() == ob->resource_version() && oa->json() == ob->json()) {
          ++n.unchanged;
        } else {
          ++n.changed;
          if (options.summary_only) {
            a->Next();
            b->Next();
            continue;
          }
          lines.push_back("  ~ " + a->key() + " (resourceVersion " + oa->resource_version() +
                          " -> " + ob->resource_version() + ")");
          KCACHE_ASSIGN_OR_RETURN(json da, oa->Document());
          KCACHE_ASSIGN_OR_RETURN(json db, ob->Document());
          std::vector<std::string> fields;
          FieldDiff(da, db, "", &fields);
          for (const std::string& f : fields) lines.push_back("      " + f);
        }
        a->Next();
        b->Next();
      }
    }
    if (a) KCACHE_RETURN_IF_ERROR(a->status());
    if (b) KCACHE_RETURN_IF_ERROR(b->status());
    bool any = n.added || n.removed || n.changed;
    differ = differ || any;
    out << ks << ": ";
    if (!any) {
      out << "no differences (" << n.unchanged << " objects)\n";
      continue;
    }
    out << n.added << " added, " << n.removed << " removed, " << n.changed << " changed, "
        << n.unchanged << " unchanged\n";
    for (const std::string& l : lines) out << l << "\n";
  }
  return differ;
}

namespace {

// Exit codes as diff(1) and kubectl diff: 0 no differences, 1 differences,
// 2 trouble.
int DiffMain(const Command& self, const std::vector<std::string>& args) {
  DiffOptions o;
  cli::FlagSet flags;
  flags.Bool("summary", '\0', &o.summary_only, "only the counts per resource");
  KeyFlags(flags);
  std::vector<std::string> positional;
  if (int rc = ParseFlags(self, flags, args, &positional); rc >= 0) return rc;
  if (positional.size() != 2) {
    Fail(Status::InvalidArgument(
             "name two caches or snapshot files, e.g. kcache diff before.kcs after.kcs"),
         "diff");
    return 2;
  }
  o.from = positional[0];
  o.to = positional[1];
  StatusOr<bool> differ = RunDiff(o, std::cout);
  if (!differ.ok()) {
    Fail(differ.status(), "diff");
    return 2;
  }
  return *differ ? 1 : 0;
}

}  // namespace

const Command kDiffCommand = {
    "diff",
    "diff FROM TO [--summary]",
    "added, removed and changed objects between caches or snapshots",
    "Added, removed and changed objects between two caches or snapshot files (each path is "
    "either). Exit code 0: no differences, 1: differences, 2: trouble.",
    "  kcache diff before.kcs after.kcs\n"
    "  kcache diff /var/lib/kcache after.kcs --summary\n",
    DiffMain};

}  // namespace kcache::tool
