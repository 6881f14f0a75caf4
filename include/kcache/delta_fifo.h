// SPDX-License-Identifier: Apache-2.0

// DeltaFIFO: a queue of per-key change lists (client-go's DeltaFIFO, in its
// v0.32 form).
//
// Each key is queued once, with every change (Delta) it had since it was
// last popped, oldest first; consecutive deletions of a key collapse into
// one, keeping the older unless it is a tombstone. Replace (a relist)
// queues each listed object as Replaced and, for each key the queue or the
// known objects have and the list does not, a Deleted delta carrying a
// DeletedFinalStateUnknown tombstone with the newest queued object, or the
// known one if the key is not queued.
//
// kcache's informers do not use it: they commit each watch event to the
// store and hand every event, in order, to each handler's queue, as
// client-go's in-order informers do (docs/informers.md). A DeltaFIFO suits a
// consumer that wants a key's changes coalesced, such as a work queue, and
// can be fed by a Reflector (it is a ReflectorSink).
//
// Thread-safety: safe for concurrent use. Pop() hands the Deltas to the
// caller: nothing runs under the queue's lock.
#ifndef KCACHE_DELTA_FIFO_H_
#define KCACHE_DELTA_FIFO_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/export.h"
#include "kcache/key.h"
#include "kcache/reflector.h"
#include "kcache/store.h"

namespace kcache {

enum class DeltaType { kAdded, kUpdated, kDeleted, kReplaced, kSync };

// "Added", "Updated", "Deleted", "Replaced", "Sync".
KCACHE_EXPORT std::string_view DeltaTypeName(DeltaType type);

struct KCACHE_EXPORT Delta {
  DeltaType type{};
  DeletedObject object{};  // a tombstone only for kDeleted
};

// Oldest first.
using Deltas = std::vector<Delta>;

struct KCACHE_EXPORT DeltaFIFOOptions {
  // Default: MetaNamespaceKeyFunc.
  KeyFunc key_func = MetaNamespaceKeyFunc;
  // What the consumer holds (its store): the source of Resync and of
  // deletions detected by Replace. Null: the queue's own contents are used.
  std::shared_ptr<const Store> known_objects{};
  // Queue listed objects as kReplaced rather than kSync. Default: true.
  bool emit_delta_type_replaced = true;
  // Applied once per object entering the queue: by Add, Update, Delete and
  // Replace, not to tombstones nor to Resync's kSync objects, which come
  // from the known objects. Default: none.
  TransformFunc transform{};
};

class KCACHE_EXPORT DeltaFIFO final : public ReflectorSink {
 public:
  explicit DeltaFIFO(DeltaFIFOOptions options = {});

  Status Add(ObjectPtr object);
  Status Update(ObjectPtr object);
  // Ignored for a key that neither the known objects nor the queue have.
  Status Delete(DeletedObject object);
  // Queues `objects` as Replaced and tombstones for vanished keys.
  Status Replace(std::vector<ObjectPtr> objects, std::string resource_version);
  // Queues a kSync delta for each known object whose key is not queued.
  // Also the ReflectorSink's Resync: a reflector with a resync period
  // calls it.
  Status Resync() override;
  // Queues `deltas` under their key unless the key is queued already, when
  // they are dropped (client-go's AddIfNotPresent: to put back what Pop
  // returned for a retry without undoing newer changes).
  // InvalidArgument for empty Deltas.
  Status AddIfNotPresent(Deltas deltas);

  // Blocks until a key is queued and returns its Deltas, removing it.
  // After Close(), what is still queued is returned, then Cancelled
  // "DeltaFIFO: manipulating with closed queue" (client-go's ErrFIFOClosed).
  StatusOr<Deltas> Pop();
  void Close();

  // True once the first Replace (or Add/Update/Delete) has been queued and
  // every key it queued has been popped.
  bool HasSynced() const;
  // Queued keys, in queue order.
  std::vector<std::string> ListKeys() const;
  // The queued Deltas of `key`, or null if it is not queued.
  std::unique_ptr<Deltas> GetByKey(std::string_view key) const;
  size_t Len() const;

  // The key of an object, a tombstone, or the newest delta of a list.
  // InvalidArgument "0 length Deltas object; can't get key" for no deltas.
  StatusOr<std::string> KeyOf(const DeletedObject& object) const;
  StatusOr<std::string> KeyOf(const Deltas& deltas) const;

  // ReflectorSink: watch events become Add/Update/Delete; a relist is
  // gathered and queued by Replace at Finish.
  Status Apply(std::vector<WatchEvent> events, std::string resource_version) override;
  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace() override;
  std::string ResumeResourceVersion() const override;

 private:
  Status QueueLocked(DeltaType type, DeletedObject object, bool from_list = false);

  const DeltaFIFOOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Deltas, std::less<>> items_;  // guarded by mu_
  std::deque<std::string> queue_;                     // guarded by mu_
  bool populated_ = false;                            // guarded by mu_
  size_t initial_population_ = 0;                     // guarded by mu_
  bool closed_ = false;                               // guarded by mu_
  std::string resource_version_;                      // guarded by mu_
};

}  // namespace kcache

#endif  // KCACHE_DELTA_FIFO_H_
