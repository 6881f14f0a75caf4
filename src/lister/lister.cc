#include "kcache/lister.h"

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

// The label index values that every match must have one of: those of the
// =, == or in requirement with the fewest candidates. Empty if the selector
// has no such requirement or the indexer no label index.
StatusOr<std::vector<std::string>> LabelIndexValues(const Indexer& indexer,
                                                    const LabelSelector& selector) {
  std::vector<std::string> best;
  size_t best_count = SIZE_MAX;
  if (!indexer.GetIndexers().count(kLabelIndex)) return best;
  for (const Requirement& r : selector.requirements()) {
    if (r.op() != SelectionOperator::kEquals && r.op() != SelectionOperator::kDoubleEquals &&
        r.op() != SelectionOperator::kIn) {
      continue;
    }
    std::vector<std::string> values;
    size_t count = 0;
    for (const std::string& v : r.values()) {
      values.push_back(r.key() + "=" + v);
      KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> keys, indexer.IndexKeys(kLabelIndex, values.back()));
      count += keys.size();
    }
    if (count < best_count) {
      best_count = count;
      best = std::move(values);
    }
  }
  return best;
}

// Walks the label index entries of `values` merged in key order, filtering
// by namespace and the whole selector. One requirement's values never match
// the same object twice (an object has one value per label key).
Status WalkLabelIndex(const Indexer& indexer, const std::vector<std::string>& values,
                      const LabelSelector& selector, std::string_view ns,
                      const ObjectVisitor& visit) {
  std::vector<std::unique_ptr<ObjectIterator>> its;
  for (const std::string& v : values) its.push_back(indexer.NewIndexIterator(kLabelIndex, v));
  while (true) {
    ObjectIterator* next = nullptr;
    for (auto& it : its) {
      if (it->Valid() && (!next || it->key() < next->key())) next = it.get();
    }
    if (!next) break;
    const ObjectPtr& obj = next->object();
    if ((ns.empty() || obj->namespace_() == ns) && selector.Matches(obj->labels()) && !visit(obj)) {
      return Status::OK();
    }
    next->Next();
  }
  for (auto& it : its) KCACHE_RETURN_IF_ERROR(it->status());
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
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> values, LabelIndexValues(*indexer, selector));
    if (!values.empty()) return WalkLabelIndex(*indexer, values, selector, "", visit);
  }
  std::unique_ptr<ObjectIterator> it = store.NewIterator();
  return Walk(it.get(), selector, "", visit);
}

Status ListAllByNamespace(const Indexer& indexer, std::string_view ns,
                          const LabelSelector& selector, const ObjectVisitor& visit) {
  if (selector.MatchesNothing()) return Status::OK();
  if (ns.empty()) return ListAll(indexer, selector, visit);
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> values, LabelIndexValues(indexer, selector));
  // The label index reaches only the matches of one requirement, which is
  // usually fewer objects than a whole namespace.
  if (!values.empty()) return WalkLabelIndex(indexer, values, selector, ns, visit);
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
  return NamespaceLister(indexer_, resource_, std::move(ns));
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
