// SPDX-License-Identifier: Apache-2.0

#include "kcache/lister.h"

#include <algorithm>
#include <iterator>
#include <set>

namespace kcache {
namespace {

Status Walk(ObjectIterator* it, const LabelSelector& selector, std::string_view ns,
            const ObjectVisitor& visit) {
  for (; it->Valid(); it->Next()) {
    const ObjectPtr& obj = it->object();
    if (!ns.empty() && obj->namespace_() != ns) continue;
    if (selector.Matches(obj->labels()) && !visit(obj)) return Status::OK();
  }
  return it->status();
}

// Candidate keys from the label index: for each =, == or in requirement,
// the keys having one of its values; then the intersection over those
// requirements. Returns false if the selector has no such requirement or
// the indexer no label index.
StatusOr<bool> LabelIndexCandidates(const Indexer& indexer, const LabelSelector& selector,
                                    std::vector<std::string>* keys) {
  if (!indexer.GetIndexers().count(kLabelIndex)) return false;
  bool any = false;
  for (const Requirement& r : selector.requirements()) {
    if (r.op() != SelectionOperator::kEquals && r.op() != SelectionOperator::kDoubleEquals &&
        r.op() != SelectionOperator::kIn) {
      continue;
    }
    std::vector<std::string> these;
    for (const std::string& v : r.values()) {
      KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> k,
                              indexer.IndexKeys(kLabelIndex, r.key() + "=" + v));
      these.insert(these.end(), k.begin(), k.end());
    }
    std::sort(these.begin(), these.end());
    if (!any) {
      *keys = std::move(these);
      any = true;
    } else {
      std::vector<std::string> both;
      std::set_intersection(keys->begin(), keys->end(), these.begin(), these.end(),
                            std::back_inserter(both));
      *keys = std::move(both);
    }
    if (keys->empty()) break;
  }
  return any;
}

// Fetches each candidate in key order and visits those in `ns` (any if
// empty) that match the whole selector.
Status VisitCandidates(const Indexer& indexer, const std::vector<std::string>& keys,
                       const LabelSelector& selector, std::string_view ns,
                       const ObjectVisitor& visit) {
  for (const std::string& key : keys) {
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, indexer.GetByKey(key));
    if (!obj) continue;  // deleted since the index was read
    if ((ns.empty() || obj->namespace_() == ns) && selector.Matches(obj->labels()) && !visit(obj)) {
      break;
    }
  }
  return Status::OK();
}

Status NotFound(const GroupResource& resource, std::string_view name) {
  return Status::NotFound(resource.String() + " \"" + std::string(name) + "\" not found");
}

StatusOr<std::vector<ObjectPtr>> Collect(const std::function<Status(const ObjectVisitor&)>& walk) {
  std::vector<ObjectPtr> out;
  KCACHE_RETURN_IF_ERROR(walk([&](const ObjectPtr& obj) {
    out.push_back(obj);
    return true;
  }));
  return out;
}

}  // namespace

Status ListAll(const Store& store, const LabelSelector& selector, const ObjectVisitor& visit) {
  if (selector.MatchesNothing()) return Status::OK();
  if (const auto* indexer = dynamic_cast<const Indexer*>(&store)) {
    std::vector<std::string> keys;
    KCACHE_ASSIGN_OR_RETURN(bool indexed, LabelIndexCandidates(*indexer, selector, &keys));
    if (indexed) return VisitCandidates(*indexer, keys, selector, "", visit);
  }
  std::unique_ptr<ObjectIterator> it = store.NewIterator();
  return Walk(it.get(), selector, "", visit);
}

Status ListAllByNamespace(const Indexer& indexer, std::string_view ns,
                          const LabelSelector& selector, const ObjectVisitor& visit) {
  if (selector.MatchesNothing()) return Status::OK();
  if (ns.empty()) return ListAll(indexer, selector, visit);
  // The label index narrows to the objects that satisfy every equality
  // before any object is read; usually fewer than a whole namespace.
  std::vector<std::string> keys;
  KCACHE_ASSIGN_OR_RETURN(bool indexed, LabelIndexCandidates(indexer, selector, &keys));
  if (indexed) {
    // Listers key namespaced objects "namespace/name" (as Get does), so the
    // namespace narrows the candidates by key alone.
    std::string prefix = std::string(ns) + "/";
    std::erase_if(keys,
                  [&](const std::string& k) { return k.compare(0, prefix.size(), prefix) != 0; });
    return VisitCandidates(indexer, keys, selector, ns, visit);
  }
  if (indexer.GetIndexers().count(kNamespaceIndex)) {
    std::unique_ptr<ObjectIterator> it = indexer.NewIndexIterator(kNamespaceIndex, ns);
    return Walk(it.get(), selector, "", visit);
  }
  std::unique_ptr<ObjectIterator> it = indexer.NewIterator();  // no index: scan
  return Walk(it.get(), selector, ns, visit);
}

StatusOr<std::vector<ObjectPtr>> Lister::List(const LabelSelector& selector) const {
  return Collect([&](const ObjectVisitor& v) { return ListAll(*indexer_, selector, v); });
}

StatusOr<ObjectPtr> Lister::Get(std::string_view name) const {
  KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, indexer_->GetByKey(name));
  if (!obj) return NotFound(resource_, name);
  return obj;
}

NamespaceLister Lister::Namespace(std::string ns) const {
  return NamespaceLister(indexer_, resource_, std::move(ns), ref_);
}

StatusOr<std::vector<ObjectPtr>> NamespaceLister::List(const LabelSelector& selector) const {
  return Collect(
      [&](const ObjectVisitor& v) { return ListAllByNamespace(*indexer_, ns_, selector, v); });
}

StatusOr<ObjectPtr> NamespaceLister::Get(std::string_view name) const {
  KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, indexer_->GetByKey(ns_ + "/" + std::string(name)));
  if (!obj) return NotFound(resource_, name);
  return obj;
}

}  // namespace kcache
