// SPDX-License-Identifier: Apache-2.0

#include "kcache/delta_fifo.h"

#include <set>

namespace kcache {
namespace {

bool IsTombstone(const DeletedObject& o) {
  return std::holds_alternative<DeletedFinalStateUnknown>(o);
}

// Two deletions in a row are one: the older is kept unless it is a
// tombstone, which a real deletion replaces (client-go's isDeletionDup).
void DedupDeletes(Deltas& d) {
  size_t n = d.size();
  if (n < 2 || d[n - 1].type != DeltaType::kDeleted || d[n - 2].type != DeltaType::kDeleted) return;
  if (IsTombstone(d[n - 2].object)) d[n - 2] = std::move(d[n - 1]);
  d.pop_back();
}

class GatheringSession final : public ReplaceSession {
 public:
  explicit GatheringSession(DeltaFIFO* fifo) : fifo_(fifo) {}
  Status Put(ObjectPtr object) override {
    objects_.push_back(std::move(object));
    return Status::OK();
  }
  StatusOr<size_t> Finish(std::string resource_version) override {
    KCACHE_RETURN_IF_ERROR(fifo_->Replace(std::move(objects_), std::move(resource_version)));
    return size_t{0};
  }

 private:
  DeltaFIFO* fifo_;
  std::vector<ObjectPtr> objects_;
};

}  // namespace

std::string_view DeltaTypeName(DeltaType type) {
  switch (type) {
    case DeltaType::kAdded:
      return "Added";
    case DeltaType::kUpdated:
      return "Updated";
    case DeltaType::kDeleted:
      return "Deleted";
    case DeltaType::kReplaced:
      return "Replaced";
    case DeltaType::kSync:
      return "Sync";
  }
  return "Unknown";
}

DeltaFIFO::DeltaFIFO(DeltaFIFOOptions options) : options_(std::move(options)) {}

StatusOr<std::string> DeltaFIFO::KeyOf(const DeletedObject& object) const {
  if (auto* t = std::get_if<DeletedFinalStateUnknown>(&object)) return t->key;
  const ObjectPtr& o = std::get<ObjectPtr>(object);
  if (!o) return Status::InvalidArgument("couldn't create key for a null object");
  return options_.key_func(*o);
}

StatusOr<std::string> DeltaFIFO::KeyOf(const Deltas& deltas) const {
  if (deltas.empty()) return Status::InvalidArgument("0 length Deltas object; can't get key");
  return KeyOf(deltas.back().object);
}

Status DeltaFIFO::QueueLocked(DeltaType type, DeletedObject object, bool from_list) {
  // Sync deltas of Resync come from the known objects, which were
  // transformed on the way in; a listed object is new, whatever its type.
  if (options_.transform && (type != DeltaType::kSync || from_list) && !IsTombstone(object)) {
    KCACHE_ASSIGN_OR_RETURN(std::get<ObjectPtr>(object),
                            options_.transform(std::get<ObjectPtr>(object)));
  }
  KCACHE_ASSIGN_OR_RETURN(std::string key, KeyOf(object));
  auto [it, fresh] = items_.try_emplace(key);
  it->second.push_back({type, std::move(object)});
  DedupDeletes(it->second);
  if (fresh) queue_.push_back(std::move(key));
  cv_.notify_one();
  return Status::OK();
}

Status DeltaFIFO::Add(ObjectPtr object) {
  std::lock_guard l(mu_);
  populated_ = true;
  return QueueLocked(DeltaType::kAdded, std::move(object));
}

Status DeltaFIFO::Update(ObjectPtr object) {
  std::lock_guard l(mu_);
  populated_ = true;
  return QueueLocked(DeltaType::kUpdated, std::move(object));
}

Status DeltaFIFO::Delete(DeletedObject object) {
  KCACHE_ASSIGN_OR_RETURN(std::string key, KeyOf(object));
  std::lock_guard l(mu_);
  populated_ = true;
  bool queued = items_.count(key) > 0;
  if (!queued) {
    if (!options_.known_objects) return Status::OK();
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr known, options_.known_objects->GetByKey(key));
    if (!known) return Status::OK();
  }
  return QueueLocked(DeltaType::kDeleted, std::move(object));
}

Status DeltaFIFO::Replace(std::vector<ObjectPtr> objects, std::string resource_version) {
  std::lock_guard l(mu_);
  std::set<std::string, std::less<>> keys;
  const DeltaType type =
      options_.emit_delta_type_replaced ? DeltaType::kReplaced : DeltaType::kSync;
  for (ObjectPtr& o : objects) {
    if (!o) return Status::InvalidArgument("Replace with a null object");
    KCACHE_ASSIGN_OR_RETURN(std::string key, options_.key_func(*o));
    keys.insert(std::move(key));
    KCACHE_RETURN_IF_ERROR(QueueLocked(type, std::move(o), /*from_list=*/true));
  }
  size_t deletions = 0;
  // Keys queued and not listed: a tombstone with the newest queued object.
  std::vector<std::pair<std::string, ObjectPtr>> gone;
  for (const auto& [key, deltas] : items_) {
    if (keys.count(key)) continue;
    ObjectPtr last;
    if (!deltas.empty()) {
      const DeletedObject& newest = deltas.back().object;
      if (auto* t = std::get_if<DeletedFinalStateUnknown>(&newest)) {
        last = t->obj;
      } else {
        last = std::get<ObjectPtr>(newest);
      }
    }
    gone.emplace_back(key, std::move(last));
  }
  for (auto& [key, last] : gone) {
    ++deletions;
    KCACHE_RETURN_IF_ERROR(
        QueueLocked(DeltaType::kDeleted, DeletedFinalStateUnknown{key, std::move(last)}));
  }
  // Keys known, not listed and not queued: a tombstone with the known object.
  if (options_.known_objects) {
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> known, options_.known_objects->ListKeys());
    for (const std::string& key : known) {
      if (keys.count(key) || items_.count(key)) continue;
      StatusOr<ObjectPtr> last = options_.known_objects->GetByKey(key);
      ++deletions;
      KCACHE_RETURN_IF_ERROR(QueueLocked(
          DeltaType::kDeleted, DeletedFinalStateUnknown{key, last.ok() ? *last : nullptr}));
    }
  }
  if (!populated_) {
    populated_ = true;
    initial_population_ = keys.size() + deletions;
  }
  resource_version_ = std::move(resource_version);
  return Status::OK();
}

Status DeltaFIFO::Resync() {
  if (!options_.known_objects) return Status::OK();
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> known, options_.known_objects->ListKeys());
  std::lock_guard l(mu_);
  for (const std::string& key : known) {
    if (auto it = items_.find(key); it != items_.end() && !it->second.empty()) continue;
    KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj, options_.known_objects->GetByKey(key));
    if (!obj) continue;
    KCACHE_RETURN_IF_ERROR(QueueLocked(DeltaType::kSync, std::move(obj)));
  }
  return Status::OK();
}

StatusOr<Deltas> DeltaFIFO::Pop() {
  std::unique_lock l(mu_);
  cv_.wait(l, [&] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return Status::Cancelled("DeltaFIFO: manipulating with closed queue");
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  if (initial_population_ > 0) --initial_population_;
  auto it = items_.find(key);
  Deltas out = std::move(it->second);
  items_.erase(it);
  return out;
}

Status DeltaFIFO::AddIfNotPresent(Deltas deltas) {
  KCACHE_ASSIGN_OR_RETURN(std::string key, KeyOf(deltas));
  std::lock_guard l(mu_);
  populated_ = true;
  auto [it, fresh] = items_.try_emplace(key);
  if (!fresh) return Status::OK();
  it->second = std::move(deltas);
  queue_.push_back(std::move(key));
  cv_.notify_one();
  return Status::OK();
}

void DeltaFIFO::Close() {
  std::lock_guard l(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool DeltaFIFO::HasSynced() const {
  std::lock_guard l(mu_);
  return populated_ && initial_population_ == 0;
}

std::vector<std::string> DeltaFIFO::ListKeys() const {
  std::lock_guard l(mu_);
  return {queue_.begin(), queue_.end()};
}

std::unique_ptr<Deltas> DeltaFIFO::GetByKey(std::string_view key) const {
  std::lock_guard l(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : std::make_unique<Deltas>(it->second);
}

size_t DeltaFIFO::Len() const {
  std::lock_guard l(mu_);
  return queue_.size();
}

Status DeltaFIFO::Apply(std::vector<WatchEvent> events, std::string resource_version) {
  for (WatchEvent& e : events) {
    switch (e.type) {
      case WatchEventType::kAdded:
        KCACHE_RETURN_IF_ERROR(Add(std::move(e.object)));
        break;
      case WatchEventType::kModified:
        KCACHE_RETURN_IF_ERROR(Update(std::move(e.object)));
        break;
      case WatchEventType::kDeleted:
        KCACHE_RETURN_IF_ERROR(Delete(std::move(e.object)));
        break;
      case WatchEventType::kBookmark:
        break;
    }
  }
  std::lock_guard l(mu_);
  resource_version_ = std::move(resource_version);
  return Status::OK();
}

StatusOr<std::unique_ptr<ReplaceSession>> DeltaFIFO::BeginReplace() {
  return std::unique_ptr<ReplaceSession>(std::make_unique<GatheringSession>(this));
}

std::string DeltaFIFO::ResumeResourceVersion() const {
  std::lock_guard l(mu_);
  return resource_version_;
}

}  // namespace kcache
