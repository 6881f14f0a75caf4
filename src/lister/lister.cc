#include "kcache/lister.h"

namespace kcache {
namespace {

Status Walk(ObjectIterator* it, const LabelSelector& selector, const ObjectVisitor& visit) {
  for (; it->Valid(); it->Next()) {
    const ObjectPtr& obj = it->object();
    if (selector.Matches(obj->labels()) && !visit(obj)) return Status::OK();
  }
  return it->status();
}

Status NotFound(const GroupResource& resource, std::string_view name) {
  return Status::NotFound(resource.String() + " \"" + std::string(name) + "\" not found");
}

StatusOr<std::vector<ObjectPtr>> Collect(
    const std::function<Status(const ObjectVisitor&)>& walk) {
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
  std::unique_ptr<ObjectIterator> it = store.NewIterator();
  return Walk(it.get(), selector, visit);
}

Status ListAllByNamespace(const Indexer& indexer, std::string_view ns,
                          const LabelSelector& selector, const ObjectVisitor& visit) {
  if (selector.MatchesNothing()) return Status::OK();
  if (ns.empty()) return ListAll(indexer, selector, visit);
  if (indexer.GetIndexers().count(kNamespaceIndex)) {
    std::unique_ptr<ObjectIterator> it = indexer.NewIndexIterator(kNamespaceIndex, ns);
    return Walk(it.get(), selector, visit);
  }
  // No namespace index: scan and filter.
  return ListAll(indexer, selector, [&](const ObjectPtr& obj) {
    return obj->namespace_() != ns || visit(obj);
  });
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
