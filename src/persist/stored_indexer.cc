// SPDX-License-Identifier: Apache-2.0

#include "persist/stored_indexer.h"

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "core/store_errors.h"

namespace kcache::storage {
namespace {

constexpr char kNamespaceVersion[] = "kcache.io/namespace@1";
constexpr char kNamespaceFromKeysVersion[] = "kcache.io/namespace@keys";
constexpr char kLabelVersion[] = "kcache.io/labels@1";

using DecodeFn = std::function<StatusOr<ObjectPtr>(std::string_view key, std::string_view record)>;

// Iterates the objects of a keyspace, or the objects one index value lists,
// over a pinned view of the rows.
class RowIterator final : public ObjectIterator {
 public:
  // Objects: walk `family` from `start`; index: walk the index and look
  // each key up in the objects. Keys are what follows the first `strip`
  // bytes; `cluster_only` skips namespaced keys (those with a '/').
  RowIterator(std::shared_ptr<const Rows> rows, Family family, std::string start, std::string end,
              size_t strip, bool via_index, bool cluster_only, std::string ks, DecodeFn decode)
      : rows_(rows->Pin()),
        cursor_(rows_->NewCursor(family, std::move(end))),
        strip_(strip),
        via_index_(via_index),
        cluster_only_(cluster_only),
        ks_(std::move(ks)),
        decode_(std::move(decode)) {
    cursor_->Seek(start);
    Load();
  }

  bool Valid() const override { return valid_; }
  void Next() override {
    cursor_->Next();
    Load();
  }
  const std::string& key() const override { return key_; }
  const ObjectPtr& object() const override { return obj_; }
  Status status() const override {
    if (!status_.ok()) return status_;
    return cursor_->status().WithContext("iterate " + ks_);
  }

 private:
  void Load() {
    valid_ = false;
    while (cluster_only_ && cursor_->Valid() &&
           cursor_->key().substr(strip_).find('/') != std::string_view::npos) {
      cursor_->Next();
    }
    if (!cursor_->Valid()) return;
    key_.assign(cursor_->key().substr(strip_));
    StatusOr<ObjectPtr> obj = via_index_ ? Lookup() : decode_(key_, cursor_->value());
    if (!obj.ok()) {
      status_ = obj.status();  // it names the object (StoredIndexer::Decode, Lookup)
      return;
    }
    obj_ = std::move(obj).value();
    valid_ = true;
  }

  // The object an index entry names.
  StatusOr<ObjectPtr> Lookup() const {
    StatusOr<std::optional<std::string>> record =
        rows_->Get(Family::kObjects, ObjectKey(ks_, key_));
    if (!record.ok()) return record.status().WithContext("read object " + key_ + " of " + ks_);
    if (!*record) {
      return Status::Corruption("keyspace " + ks_ + ": index entry for missing object " + key_);
    }
    return decode_(key_, **record);
  }

  std::shared_ptr<const Rows> rows_;  // outlives cursor_
  std::unique_ptr<RowCursor> cursor_;
  size_t strip_;
  bool via_index_;
  bool cluster_only_;
  std::string ks_;
  DecodeFn decode_;
  bool valid_ = false;
  std::string key_;
  ObjectPtr obj_;
  Status status_;
};

// An iterator that has failed before it started.
class ErrorIterator final : public ObjectIterator {
 public:
  explicit ErrorIterator(Status s) : status_(std::move(s)) {}
  bool Valid() const override { return false; }
  void Next() override {}
  const std::string& key() const override { return key_; }
  const ObjectPtr& object() const override { return obj_; }
  Status status() const override { return status_; }

 private:
  Status status_;
  std::string key_;
  ObjectPtr obj_;
};

}  // namespace

StatusOr<StoredIndexer::Defs> StoredIndexer::DefsFor(const KeyspaceOptions& options) {
  Defs defs;
  for (const auto& [name, fn] : options.indexers) {
    KCACHE_RETURN_IF_ERROR(CheckNoZero("index name", name));
    auto v = options.index_versions.find(name);
    defs[name] = IndexDef{fn, v == options.index_versions.end() ? "" : v->second};
  }
  if (options.namespace_index && !defs.count(kNamespaceIndex)) {
    using Fn = StatusOr<std::string> (*)(const Object&);
    const Fn* fn = options.key_func.target<Fn>();
    bool namespaced_keys = fn && *fn == &MetaNamespaceKeyFunc;
    defs[kNamespaceIndex] =
        IndexDef{MetaNamespaceIndexFunc,
                 namespaced_keys ? kNamespaceFromKeysVersion : kNamespaceVersion, namespaced_keys};
  }
  if (options.label_index && !defs.count(kLabelIndex)) {
    defs[kLabelIndex] = IndexDef{MetaLabelIndexFunc, kLabelVersion};
  }
  return defs;
}

StoredIndexer::StoredIndexer(std::shared_ptr<const Rows> rows, std::string ks, KeyFunc key_func,
                             Defs defs)
    : rows_(std::move(rows)),
      ks_(std::move(ks)),
      key_func_(std::move(key_func)),
      defs_(std::move(defs)) {}

StatusOr<std::map<std::string, std::string, std::less<>>> StoredIndexer::RecordedIndexVersions()
    const {
  std::map<std::string, std::string, std::less<>> recorded;
  KeyRange range = PrefixRange(IndexVersionKey(ks_, ""));
  KCACHE_RETURN_IF_ERROR(Scan(Family::kMeta, range.start, range.limit, range.start.size(),
                              [&](std::string_view name, std::string_view version) {
                                recorded[std::string(name)] = std::string(version);
                                return Status::OK();
                              })
                             .WithContext("read index versions of " + ks_));
  return recorded;
}

Status StoredIndexer::AdoptRecordedIndexes() {
  KCACHE_ASSIGN_OR_RETURN(auto recorded, RecordedIndexVersions());
  std::unique_lock l(defs_mu_);
  for (const auto& [name, version] : recorded) {
    if (!defs_.count(name)) {
      defs_[name] = IndexDef{nullptr, version, version == kNamespaceFromKeysVersion};
    }
  }
  return Status::OK();
}

StatusOr<std::optional<std::string>> StoredIndexer::ReadMeta(std::string_view kind) const {
  StatusOr<std::optional<std::string>> v = rows_->Get(Family::kMeta, MetaKey(kind, ks_));
  if (!v.ok()) return v.status().WithContext("read " + std::string(kind) + " of " + ks_);
  return v;
}

StatusOr<size_t> StoredIndexer::StoredCount() const {
  KCACHE_ASSIGN_OR_RETURN(std::optional<std::string> count, ReadMeta("count"));
  return count ? static_cast<size_t>(std::strtoull(count->c_str(), nullptr, 10)) : size_t{0};
}

std::string StoredIndexer::StoredResumePoint() const {
  StatusOr<std::optional<std::string>> relist = ReadMeta("relist");
  if (!relist.ok() || *relist) return "";
  StatusOr<std::optional<std::string>> rv = ReadMeta("rv");
  if (!rv.ok() || !*rv) return "";
  return **rv;
}

Status StoredIndexer::Scan(Family family, const std::string& begin, const std::string& end,
                           size_t strip, const ScanFn& fn) const {
  std::unique_ptr<RowCursor> c = rows_->NewCursor(family, end);
  for (c->Seek(begin); c->Valid(); c->Next()) {
    KCACHE_RETURN_IF_ERROR(fn(c->key().substr(strip), c->value()));
  }
  return c->status().WithContext("read " + ks_);
}

Status StoredIndexer::ScanObjects(const ScanFn& fn) const {
  KeyRange keys = KeyspaceRange(ks_);
  return Scan(Family::kObjects, keys.start, keys.limit, keys.start.size(), fn);
}

bool StoredIndexer::FromKeys(std::string_view name) const {
  std::shared_lock l(defs_mu_);
  auto d = defs_.find(name);
  return d != defs_.end() && d->second.from_keys;
}

Status StoredIndexer::HasIndex(std::string_view name) const {
  std::shared_lock l(defs_mu_);
  return defs_.count(name) ? Status::OK() : UnknownIndexError(name);
}

StatusOr<ObjectPtr> StoredIndexer::Decode(std::string_view key, std::string_view record) const {
  std::string_view rv, json;
  std::string opened;
  // The keyring only for a sealed record: a plain read (the hot path of
  // lists) takes no lock for it.
  const std::shared_ptr<const Keyring> keyring =
      IsSealedObject(record) ? rows_->keyring() : nullptr;
  KCACHE_RETURN_IF_ERROR(OpenObject(keyring.get(), ks_, key, record, &rv, &json, &opened));
  // Validated when written, checksummed by RocksDB since: metadata only.
  StatusOr<ObjectPtr> obj = Object::ParseTrusted(json);
  if (!obj.ok()) {
    return Status::Corruption("object " + std::string(key) + " of keyspace " + ks_ +
                              ": stored object: " + std::string(obj.status().message()));
  }
  return obj;
}

StatusOr<ObjectPtr> StoredIndexer::Get(const Object& object) const {
  StatusOr<std::string> key = key_func_(object);
  if (!key.ok()) return KeyError(object, key.status());
  return GetByKey(*key);
}

StatusOr<ObjectPtr> StoredIndexer::GetByKey(std::string_view key) const {
  StatusOr<std::optional<std::string>> record = rows_->Get(Family::kObjects, ObjectKey(ks_, key));
  if (!record.ok()) return record.status().WithContext("read " + ks_);
  if (!*record) return ObjectPtr();
  return Decode(key, **record);
}

std::unique_ptr<ObjectIterator> StoredIndexer::NewIterator() const { return NewIteratorFrom(""); }

std::unique_ptr<ObjectIterator> StoredIndexer::NewIteratorFrom(std::string_view start) const {
  KeyRange keys = KeyspaceRange(ks_);
  size_t strip = keys.start.size();
  keys.start.append(start);  // the iterator seeks its first key
  return std::make_unique<RowIterator>(
      rows_, Family::kObjects, std::move(keys.start), std::move(keys.limit), strip,
      /*via_index=*/false, /*cluster_only=*/false, ks_,
      [this](std::string_view k, std::string_view r) { return Decode(k, r); });
}

std::unique_ptr<ObjectIterator> StoredIndexer::NewIndexIterator(std::string_view name,
                                                                std::string_view value) const {
  if (Status st = HasIndex(name); !st.ok()) return std::make_unique<ErrorIterator>(st);
  auto decode = [this](std::string_view k, std::string_view r) { return Decode(k, r); };
  if (FromKeys(name)) {
    // A namespace's objects are the keys "<ns>/..."; cluster-scoped ones
    // (namespace "") are the keys without '/'.
    size_t strip = KeyspacePrefix(ks_).size();
    KeyRange keys = value.empty() ? KeyspaceRange(ks_) : NamespaceRange(ks_, value);
    return std::make_unique<RowIterator>(rows_, Family::kObjects, std::move(keys.start),
                                         std::move(keys.limit), strip, /*via_index=*/false,
                                         /*cluster_only=*/value.empty(), ks_, decode);
  }
  KeyRange range = PrefixRange(IndexValuePrefix(ks_, name, value));
  size_t strip = range.start.size();
  return std::make_unique<RowIterator>(rows_, Family::kIndex, std::move(range.start),
                                       std::move(range.limit), strip,
                                       /*via_index=*/true, /*cluster_only=*/false, ks_, decode);
}

StatusOr<std::vector<ObjectPtr>> StoredIndexer::List() const {
  std::vector<ObjectPtr> out;
  auto it = NewIterator();
  for (; it->Valid(); it->Next()) out.push_back(it->object());
  KCACHE_RETURN_IF_ERROR(it->status());
  return out;
}

StatusOr<std::vector<std::string>> StoredIndexer::ListKeys() const {
  std::vector<std::string> out;
  KCACHE_RETURN_IF_ERROR(ScanObjects([&](std::string_view key, std::string_view) {
    out.emplace_back(key);
    return Status::OK();
  }));
  return out;
}

StatusOr<std::vector<std::string>> StoredIndexer::IndexKeys(std::string_view name,
                                                            std::string_view value) const {
  KCACHE_RETURN_IF_ERROR(HasIndex(name));
  std::vector<std::string> out;
  if (FromKeys(name)) {
    KeyRange range = value.empty() ? KeyspaceRange(ks_) : NamespaceRange(ks_, value);
    KCACHE_RETURN_IF_ERROR(Scan(Family::kObjects, range.start, range.limit,
                                KeyspacePrefix(ks_).size(),
                                [&](std::string_view key, std::string_view) {
                                  // Namespace "" is the cluster-scoped
                                  // objects: the keys without '/'.
                                  if (!value.empty() || key.find('/') == std::string_view::npos)
                                    out.emplace_back(key);
                                  return Status::OK();
                                }));
    return out;
  }
  KeyRange range = PrefixRange(IndexValuePrefix(ks_, name, value));
  KCACHE_RETURN_IF_ERROR(Scan(Family::kIndex, range.start, range.limit, range.start.size(),
                              [&](std::string_view key, std::string_view) {
                                out.emplace_back(key);
                                return Status::OK();
                              }));
  return out;
}

StatusOr<std::vector<ObjectPtr>> StoredIndexer::ByIndex(std::string_view name,
                                                        std::string_view value) const {
  std::vector<ObjectPtr> out;
  auto it = NewIndexIterator(name, value);
  for (; it->Valid(); it->Next()) out.push_back(it->object());
  KCACHE_RETURN_IF_ERROR(it->status());
  return out;
}

StatusOr<std::vector<ObjectPtr>> StoredIndexer::Index(std::string_view name,
                                                      const Object& object) const {
  IndexFunc fn;
  {
    std::shared_lock l(defs_mu_);
    auto d = defs_.find(name);
    if (d == defs_.end()) return UnknownIndexError(name);
    fn = d->second.fn;
  }
  if (!fn) {
    return Status::FailedPrecondition(
        "index " + std::string(name) + " of " + ks_ +
        " can be read here but not computed: its function is not configured");
  }
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> values, fn(object));
  std::vector<std::string> keys;
  for (const std::string& v : values) {
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> k, IndexKeys(name, v));
    keys.insert(keys.end(), k.begin(), k.end());
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<ObjectPtr> out;
  for (const std::string& k : keys) {
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr o, GetByKey(k));
    if (o) out.push_back(std::move(o));
  }
  return out;
}

StatusOr<std::vector<std::string>> StoredIndexer::ListIndexFuncValues(std::string_view name) const {
  std::vector<std::string> out;
  if (!HasIndex(name).ok()) return out;
  if (FromKeys(name)) {
    // Skip from one namespace to the next; keys without '/' mean "".
    const auto [prefix, end] = KeyspaceRange(ks_);
    std::unique_ptr<RowCursor> c = rows_->NewCursor(Family::kObjects, end);
    bool cluster_scoped = false;
    c->Seek(prefix);
    while (c->Valid()) {
      std::string_view key = c->key().substr(prefix.size());
      size_t slash = key.find('/');
      if (slash == std::string_view::npos) {
        cluster_scoped = true;
        c->Next();
        continue;
      }
      std::string ns(key.substr(0, slash));
      out.push_back(ns);
      c->Seek(NamespaceRange(ks_, ns).limit);
    }
    KCACHE_RETURN_IF_ERROR(c->status().WithContext("read keys of " + ks_));
    if (cluster_scoped) out.insert(out.begin(), "");
    return out;
  }
  KeyRange range = PrefixRange(IndexPrefix(ks_, name));
  const std::string& prefix = range.start;
  std::unique_ptr<RowCursor> c = rows_->NewCursor(Family::kIndex, range.limit);
  c->Seek(prefix);
  while (c->Valid()) {
    std::string_view rest = c->key().substr(prefix.size());
    std::string value(rest.substr(0, rest.find('\0')));
    out.push_back(value);
    c->Seek(PrefixRange(IndexValuePrefix(ks_, name, value)).limit);  // past this value's keys
  }
  KCACHE_RETURN_IF_ERROR(c->status().WithContext("read index of " + ks_));
  return out;
}

Indexers StoredIndexer::GetIndexers() const {
  std::shared_lock l(defs_mu_);
  Indexers out;
  for (const auto& [name, def] : defs_) {
    if (def.fn) out.emplace(name, def.fn);
  }
  return out;
}

}  // namespace kcache::storage
