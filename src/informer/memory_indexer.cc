// SPDX-License-Identifier: Apache-2.0

// The in-memory Indexer: a std::map of objects and, per index, a map from
// value to the set of keys, all under one reader/writer lock.
//
// Key and index functions run under the lock (as in client-go's
// threadSafeMap): they must not call back into the store.

#include <algorithm>
#include <mutex>
#include <set>
#include <shared_mutex>

#include "util/rw_mutex.h"

#include "core/store_errors.h"
#include "kcache/indexer.h"

namespace kcache {

StatusOr<std::vector<std::string>> MetaNamespaceIndexFunc(const Object& object) {
  if (!object.has_metadata()) return Status::InvalidArgument("object has no meta");
  return std::vector<std::string>{object.namespace_()};
}

StatusOr<std::vector<std::string>> MetaLabelIndexFunc(const Object& object) {
  std::vector<std::string> out;
  out.reserve(object.labels().size());
  for (const auto& [k, v] : object.labels()) out.push_back(k + "=" + v);
  return out;
}

namespace {

using KeySet = std::set<std::string, std::less<>>;
using IndexMap = std::map<std::string, KeySet, std::less<>>;

class MemoryIndexer final : public Indexer {
 public:
  explicit MemoryIndexer(MemoryIndexerOptions options)
      : key_func_(std::move(options.key_func)), indexers_(std::move(options.indexers)) {
    if (options.namespace_index && !indexers_.count(kNamespaceIndex)) {
      indexers_.emplace(kNamespaceIndex, MetaNamespaceIndexFunc);
    }
    if (options.label_index && !indexers_.count(kLabelIndex)) {
      indexers_.emplace(kLabelIndex, MetaLabelIndexFunc);
    }
    for (const auto& [name, fn] : indexers_) indices_[name];
  }

  Status Add(ObjectPtr object) override { return Put(std::move(object)); }
  Status Update(ObjectPtr object) override { return Put(std::move(object)); }

  Status Delete(const ObjectPtr& object) override {
    if (!object) return Status::InvalidArgument("Delete of a null object");
    StatusOr<std::string> key = key_func_(*object);
    if (!key.ok()) return KeyError(*object, key.status());
    std::unique_lock lock(mu_);
    DeleteLocked(*key);
    if (!object->resource_version().empty()) rv_ = object->resource_version();
    return Status::OK();
  }

  Status DeleteKey(std::string_view key) override {
    std::unique_lock lock(mu_);
    DeleteLocked(key);
    return Status::OK();
  }

  Status Commit(const Transaction& txn, TransactionResult* result) override {
    Status first_error;
    std::unique_lock lock(mu_);
    std::string last_rv;
    for (size_t i = 0; i < txn.ops.size(); ++i) {
      const Transaction::Op& op = txn.ops[i];
      Status st = ApplyLocked(op);
      if (!st.ok()) {
        if (first_error.ok()) first_error = st.WithContext("op " + std::to_string(i));
        continue;
      }
      if (result) result->successful_indices.push_back(i);
      if (op.object && !op.object->resource_version().empty()) {
        last_rv = op.object->resource_version();
      }
    }
    if (txn.resource_version) {
      rv_ = *txn.resource_version;
    } else if (!last_rv.empty()) {
      rv_ = last_rv;
    }
    return first_error;
  }

  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace(ChangeSink sink) override;

  StatusOr<ReplaceResult> Replace(std::vector<ObjectPtr> objects,
                                  std::string resource_version) override {
    Items next;
    for (ObjectPtr& obj : objects) {
      if (!obj) return Status::InvalidArgument("Replace with a null object");
      StatusOr<std::string> key = key_func_(*obj);
      if (!key.ok()) return KeyError(*obj, key.status());
      next[*key] = std::move(obj);
    }
    std::unique_lock lock(mu_);
    ReplaceResult result;
    for (auto& [key, obj] : next) {
      auto old = items_.find(key);
      if (old == items_.end()) {
        result.changes.push_back({StoreChange::Type::kAdded, key, nullptr, obj});
      } else if (!obj->resource_version().empty() &&
                 obj->resource_version() == old->second->resource_version() &&
                 obj->json() == old->second->json()) {
        obj = old->second;  // unchanged: keep the stored copy
        ++result.unchanged;
      } else {
        result.changes.push_back({StoreChange::Type::kUpdated, key, old->second, obj});
      }
    }
    for (const auto& [key, obj] : items_) {
      if (!next.count(key))
        result.changes.push_back({StoreChange::Type::kDeleted, key, obj, nullptr});
    }
    // Rebuild every index over the new contents before touching state, so
    // an index function error leaves the store as it was.
    KCACHE_ASSIGN_OR_RETURN(auto indices, BuildIndices(indexers_, next));
    items_ = std::move(next);
    indices_ = std::move(indices);
    rv_ = std::move(resource_version);
    return result;
  }

  StatusOr<ObjectPtr> Get(const Object& object) const override {
    StatusOr<std::string> key = key_func_(object);
    if (!key.ok()) return KeyError(object, key.status());
    return GetByKey(*key);
  }

  StatusOr<ObjectPtr> GetByKey(std::string_view key) const override {
    std::shared_lock lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? ObjectPtr() : it->second;
  }

  StatusOr<std::vector<ObjectPtr>> List() const override {
    std::shared_lock lock(mu_);
    std::vector<ObjectPtr> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) out.push_back(obj);
    return out;
  }

  StatusOr<std::vector<std::string>> ListKeys() const override {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) out.push_back(key);
    return out;
  }

  std::unique_ptr<ObjectIterator> NewIterator() const override;
  std::unique_ptr<ObjectIterator> NewIteratorFrom(std::string_view start) const override;

  StatusOr<size_t> Size() const override {
    std::shared_lock lock(mu_);
    return items_.size();
  }

  std::string LastSyncResourceVersion() const override {
    std::shared_lock lock(mu_);
    return rv_;
  }

  Status Resync() override { return Status::OK(); }

  StatusOr<std::string> KeyOf(const Object& object) const override { return key_func_(object); }

  StatusOr<std::vector<ObjectPtr>> Index(std::string_view name,
                                         const Object& object) const override {
    std::shared_lock lock(mu_);
    auto fn = indexers_.find(name);
    if (fn == indexers_.end()) return UnknownIndexError(name);
    StatusOr<std::vector<std::string>> values = fn->second(object);
    if (!values.ok()) return values.status().WithContext("index " + std::string(name));
    const IndexMap& index = indices_.find(name)->second;
    KeySet keys;
    for (const std::string& v : *values) {
      auto bucket = index.find(v);
      if (bucket != index.end()) keys.insert(bucket->second.begin(), bucket->second.end());
    }
    return ObjectsLocked(keys);
  }

  StatusOr<std::vector<std::string>> IndexKeys(std::string_view name,
                                               std::string_view value) const override {
    std::shared_lock lock(mu_);
    auto index = indices_.find(name);
    if (index == indices_.end()) return UnknownIndexError(name);
    auto bucket = index->second.find(value);
    if (bucket == index->second.end()) return std::vector<std::string>{};
    return std::vector<std::string>(bucket->second.begin(), bucket->second.end());
  }

  StatusOr<std::vector<ObjectPtr>> ByIndex(std::string_view name,
                                           std::string_view value) const override {
    std::shared_lock lock(mu_);
    auto index = indices_.find(name);
    if (index == indices_.end()) return UnknownIndexError(name);
    auto bucket = index->second.find(value);
    if (bucket == index->second.end()) return std::vector<ObjectPtr>{};
    return ObjectsLocked(bucket->second);
  }

  std::unique_ptr<ObjectIterator> NewIndexIterator(std::string_view name,
                                                   std::string_view value) const override;

  StatusOr<std::vector<std::string>> ListIndexFuncValues(std::string_view name) const override {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    auto index = indices_.find(name);
    if (index == indices_.end()) return out;
    for (const auto& [value, keys] : index->second) out.push_back(value);
    return out;
  }

  Indexers GetIndexers() const override {
    std::shared_lock lock(mu_);
    return indexers_;
  }

  Status AddIndexers(const Indexers& indexers) override {
    std::unique_lock lock(mu_);
    std::vector<std::string> taken;
    for (const auto& [name, fn] : indexers) {
      if (indexers_.count(name)) taken.push_back(name);
    }
    KCACHE_RETURN_IF_ERROR(IndexerConflictError(taken));
    KCACHE_ASSIGN_OR_RETURN(auto built, BuildIndices(indexers, items_));
    for (auto& [name, index] : built) indices_[name] = std::move(index);
    for (const auto& [name, fn] : indexers) indexers_.emplace(name, fn);
    return Status::OK();
  }

  // For iterators: the first entry after `after` (or the first at all).
  // The first item after `after`, or (if null) not before `start`.
  bool NextItem(const std::string* after, std::string_view start, std::string* key,
                ObjectPtr* obj) const {
    std::shared_lock lock(mu_);
    auto it = after ? items_.upper_bound(*after) : items_.lower_bound(start);
    if (it == items_.end()) return false;
    *key = it->first;
    *obj = it->second;
    return true;
  }

  // For index iterators: false at the end; `status` NotFound for a missing index.
  bool NextIndexed(std::string_view name, std::string_view value, const std::string* after,
                   std::string* key, ObjectPtr* obj, Status* status) const {
    std::shared_lock lock(mu_);
    auto index = indices_.find(name);
    if (index == indices_.end()) {
      *status = UnknownIndexError(name);
      return false;
    }
    auto bucket = index->second.find(value);
    if (bucket == index->second.end()) return false;
    auto it = after ? bucket->second.upper_bound(*after) : bucket->second.begin();
    if (it == bucket->second.end()) return false;
    *key = *it;
    *obj = items_.find(*it)->second;
    return true;
  }

 private:
  using Items = std::map<std::string, ObjectPtr, std::less<>>;
  using Indices = std::map<std::string, IndexMap, std::less<>>;

  // Builds `indexers` over `items` from scratch.
  static StatusOr<Indices> BuildIndices(const Indexers& indexers, const Items& items) {
    Indices out;
    for (const auto& [name, fn] : indexers) {
      IndexMap& index = out[name];
      for (const auto& [key, obj] : items) {
        StatusOr<std::vector<std::string>> values = fn(*obj);
        if (!values.ok()) return IndexFuncError(key, name, values.status());
        for (std::string& v : *values) index[std::move(v)].insert(key);
      }
    }
    return out;
  }

  Status Put(ObjectPtr object) {
    if (!object) return Status::InvalidArgument("Add of a null object");
    StatusOr<std::string> key = key_func_(*object);
    if (!key.ok()) return KeyError(*object, key.status());
    std::unique_lock lock(mu_);
    KCACHE_RETURN_IF_ERROR(PutLocked(*key, object));
    if (!object->resource_version().empty()) rv_ = object->resource_version();
    return Status::OK();
  }

  Status ApplyLocked(const Transaction::Op& op) {
    if (op.type == Transaction::OpType::kDelete && !op.key.empty()) {
      DeleteLocked(op.key);
      return Status::OK();
    }
    if (!op.object) return Status::InvalidArgument("null object");
    StatusOr<std::string> key = key_func_(*op.object);
    if (!key.ok()) return KeyError(*op.object, key.status());
    if (op.type == Transaction::OpType::kDelete) {
      DeleteLocked(*key);
      return Status::OK();
    }
    return PutLocked(*key, op.object);
  }

  // Computes the new index values first, so a failing index function leaves
  // the store unchanged.
  Status PutLocked(const std::string& key, const ObjectPtr& object) {
    std::vector<std::pair<IndexMap*, std::vector<std::string>>> next;
    next.reserve(indexers_.size());
    for (const auto& [name, fn] : indexers_) {
      StatusOr<std::vector<std::string>> values = fn(*object);
      if (!values.ok()) return IndexFuncError(key, name, values.status());
      next.emplace_back(&indices_[name], std::move(values).value());
    }
    auto old = items_.find(key);
    if (old != items_.end()) RemoveFromIndicesLocked(key, *old->second);
    for (auto& [index, values] : next) {
      for (std::string& v : values) (*index)[std::move(v)].insert(key);
    }
    items_.insert_or_assign(key, object);
    return Status::OK();
  }

  void DeleteLocked(std::string_view key) {
    auto it = items_.find(key);
    if (it == items_.end()) return;
    RemoveFromIndicesLocked(key, *it->second);
    items_.erase(it);
  }

  // Recomputes the old object's values to find its entries; an index
  // function that fails now (it succeeded when the object was added) falls
  // back to a scan of that index.
  void RemoveFromIndicesLocked(std::string_view key, const Object& old) {
    for (const auto& [name, fn] : indexers_) {
      IndexMap& index = indices_[name];
      StatusOr<std::vector<std::string>> values = fn(old);
      if (values.ok()) {
        for (const std::string& v : *values) EraseFromBucket(&index, index.find(v), key);
      } else {
        for (auto it = index.begin(); it != index.end();) EraseFromBucket(&index, it++, key);
      }
    }
  }

  static void EraseFromBucket(IndexMap* index, IndexMap::iterator bucket, std::string_view key) {
    if (bucket == index->end()) return;
    auto k = bucket->second.find(key);
    if (k != bucket->second.end()) bucket->second.erase(k);
    if (bucket->second.empty()) index->erase(bucket);  // no empty buckets, as client-go
  }

  std::vector<ObjectPtr> ObjectsLocked(const KeySet& keys) const {
    std::vector<ObjectPtr> out;
    out.reserve(keys.size());
    for (const std::string& k : keys) out.push_back(items_.find(k)->second);
    return out;
  }

  const KeyFunc key_func_;
  mutable RWMutex mu_;
  // State below is protected by mu_.
  Indexers indexers_;
  Indices indices_;
  Items items_;
  std::string rv_;
};

class MemoryIterator final : public ObjectIterator {
 public:
  MemoryIterator(const MemoryIndexer* store, std::string_view start) : store_(store) {
    valid_ = store_->NextItem(nullptr, start, &key_, &obj_);
  }
  bool Valid() const override { return valid_; }
  void Next() override { valid_ = store_->NextItem(&key_, {}, &key_, &obj_); }
  const std::string& key() const override { return key_; }
  const ObjectPtr& object() const override { return obj_; }
  Status status() const override { return Status::OK(); }

 private:
  const MemoryIndexer* store_;
  bool valid_ = false;
  std::string key_;
  ObjectPtr obj_;
};

class MemoryIndexIterator final : public ObjectIterator {
 public:
  MemoryIndexIterator(const MemoryIndexer* store, std::string_view name, std::string_view value)
      : store_(store), name_(name), value_(value) {
    valid_ = store_->NextIndexed(name_, value_, nullptr, &key_, &obj_, &status_);
  }
  bool Valid() const override { return valid_; }
  void Next() override {
    valid_ = store_->NextIndexed(name_, value_, &key_, &key_, &obj_, &status_);
  }
  const std::string& key() const override { return key_; }
  const ObjectPtr& object() const override { return obj_; }
  Status status() const override { return status_; }

 private:
  const MemoryIndexer* store_;
  std::string name_, value_;
  bool valid_ = false;
  std::string key_;
  ObjectPtr obj_;
  Status status_;
};

std::unique_ptr<ObjectIterator> MemoryIndexer::NewIterator() const {
  return std::make_unique<MemoryIterator>(this, "");
}

std::unique_ptr<ObjectIterator> MemoryIndexer::NewIteratorFrom(std::string_view start) const {
  return std::make_unique<MemoryIterator>(this, start);
}

std::unique_ptr<ObjectIterator> MemoryIndexer::NewIndexIterator(std::string_view name,
                                                                std::string_view value) const {
  return std::make_unique<MemoryIndexIterator>(this, name, value);
}

// Memory stores hold every object anyway: the session gathers the list and
// replaces at Finish, which reports all changes in one chunk.
class MemoryReplaceSession final : public ReplaceSession {
 public:
  MemoryReplaceSession(Store* store, ChangeSink sink) : store_(store), sink_(std::move(sink)) {}
  Status Put(ObjectPtr object) override {
    if (!object) return Status::InvalidArgument("Replace with a null object");
    objects_.push_back(std::move(object));
    return Status::OK();
  }
  StatusOr<size_t> Finish(std::string resource_version) override {
    KCACHE_ASSIGN_OR_RETURN(ReplaceResult r,
                            store_->Replace(std::move(objects_), std::move(resource_version)));
    if (sink_ && !r.changes.empty()) sink_(std::move(r.changes));
    return r.unchanged;
  }

 private:
  Store* store_;
  ChangeSink sink_;
  std::vector<ObjectPtr> objects_;
};

StatusOr<std::unique_ptr<ReplaceSession>> MemoryIndexer::BeginReplace(ChangeSink sink) {
  return std::unique_ptr<ReplaceSession>(
      std::make_unique<MemoryReplaceSession>(this, std::move(sink)));
}

}  // namespace

std::shared_ptr<Indexer> NewMemoryIndexer(MemoryIndexerOptions options) {
  return std::make_unique<MemoryIndexer>(std::move(options));
}

}  // namespace kcache
