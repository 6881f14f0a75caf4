// SPDX-License-Identifier: Apache-2.0

// The recent changes of one type, decoded once and shared by every watch
// that follows them, as kube-apiserver's watch cache shares its events:
// a thousand watchers near the head cost one read of the journal per change
// and one copy of each object, not a thousand. Memory is bounded by the
// window's limits and a batch of shared pointers per watcher, whatever the
// watchers' speed.
//
// Thread-safety: thread-safe; Read is called by every watch at once.

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_EVENT_WINDOW_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_EVENT_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "kcache/status_or.h"
#include "tools/kcache/apiserver/api_source.h"

namespace kcache::serve {

struct EventWindowOptions {
  // The window drops its oldest events beyond either bound. A watch behind
  // the window reads the source itself.
  size_t max_events = 10000;
  size_t max_bytes = size_t{64} << 20;  // of the objects' JSON
};

class EventWindow {
 public:
  // Reads the source's changes after `after`, at most `max`: its answer is
  // a ChangeBatch whose position is where it read to.
  using Fill = std::function<StatusOr<ChangeBatch>(uint64_t after, size_t max)>;

  explicit EventWindow(EventWindowOptions options = {}) : options_(options) {}

  // The changes after `after`, at most `max`, from the window. When the
  // window ends at `after`, it is first extended by one call of `fill`
  // (one caller at a time; the others wait and then share what it read),
  // unless it was already extended at `generation` (the source has nothing
  // newer until the generation changes). A position past the window's end
  // starts the window anew there.
  //
  // nullopt when `after` is before the window: the caller reads the source.
  // An error of `fill` is returned, and empties the window.
  StatusOr<std::optional<ChangeBatch>> Read(uint64_t after, size_t max, uint64_t generation,
                                            const Fill& fill);

  // What the window holds: the changes after start, up to end.
  struct Extent {
    uint64_t start = 0;
    uint64_t end = 0;
    size_t events = 0;
    size_t bytes = 0;
  };
  Extent extent() const;

 private:
  // Copies up to `max` events after `after` (start_ <= after <= end_).
  ChangeBatch CopyLocked(uint64_t after, size_t max) const;

  const EventWindowOptions options_;
  std::mutex fill_mu_;  // held by the one caller extending the window
  mutable std::mutex mu_;
  bool open_ = false;                  // guarded by mu_; false until a first Read
  uint64_t start_ = 0;                 // guarded by mu_
  uint64_t end_ = 0;                   // guarded by mu_
  std::optional<uint64_t> filled_at_;  // guarded by mu_: the generation of the last fill
  std::deque<SourceEvent> events_;     // guarded by mu_; rv increasing, in (start_, end_]
  size_t bytes_ = 0;                   // guarded by mu_
};

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_EVENT_WINDOW_H_
