// WATCH: validation of the watch options, the initial events, then events
// from the history in batches, bookmarks, and the watch faults.

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/kcache/apiserver/api_query.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/testcluster/api.h"
#include "util/scope_guard.h"

namespace kcache::serve {
namespace {

using Clock = std::chrono::steady_clock;

// Appends to `pieces` the events of `batch` as `q` sees them. With a
// selector, an object that starts matching is ADDED and one that stops
// matching is DELETED (stamped with the event's resourceVersion, kept in
// `scratch`), as the apiserver's watch cache does.
void EncodeEvents(const WatchBatch& batch, const Query& q, std::deque<std::string>* scratch,
                  std::vector<std::string_view>* pieces) {
  for (const Event& e : batch.events) {
    std::string_view prefix;
    std::string_view json = e.object->object->json();
    if (!q.has_selector()) {
      prefix = e.type == EventType::kAdded      ? kAddedPrefix
               : e.type == EventType::kModified ? kModifiedPrefix
                                                : kDeletedPrefix;
    } else {
      const bool now_in =
          e.type != EventType::kDeleted && q.Matches(*e.object->object, e.object->fields);
      const bool was_in = e.prev && q.Matches(*e.prev->object, e.prev->fields);
      if (now_in && was_in) {
        prefix = kModifiedPrefix;
      } else if (now_in) {
        prefix = kAddedPrefix;
      } else if (was_in) {
        prefix = kDeletedPrefix;
        if (e.type != EventType::kDeleted) {
          json = scratch->emplace_back(Restamp(e.prev->object->json(), e.rv));
        }
      } else {
        continue;
      }
    }
    pieces->push_back(prefix);
    pieces->push_back(json);
    pieces->push_back(kEventSuffix);
  }
}

}  // namespace

void Api::Watch(const Target& t, const Query& q, uint64_t n, http::ResponseWriter& w) {
  std::optional<uint64_t> from;
  if (std::optional<Reply> bad = PlanWatch(q, &from)) return SendReply(w, *bad);
  const auto deadline = Clock::now() + (q.timeout_seconds && *q.timeout_seconds > 0
                                            ? std::chrono::seconds(*q.timeout_seconds)
                                            : options_.default_watch_timeout);
  ++watches_open_;
  util::ScopeGuard closing([this] { --watches_open_; });
  // Read before the headers go out, so that a watch that cannot start gets
  // its ERROR event right behind them, as from kube-apiserver's watch cache.
  // Read after them, a busy state (a large list holds its lock) could leave
  // the stream open and silent long enough for a client's quiet rule to
  // call it caught up.
  const uint64_t current = state_->current_rv();
  const uint64_t floor_rv = state_->floor(t.type);
  if (!w.Begin(200,
               {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}})) {
    return;
  }
  const Faults& f = options_.faults;
  if (f.expire.Contains(n)) {
    NoteFault("expire");
    w.Write(ErrorEvent(TooOldResourceVersion(q.rv.value_or("0"), std::to_string(floor_rv))));
    return;
  }
  if (f.internal_error.Contains(n)) {
    NoteFault("internal-error");
    w.Write(ErrorEvent({500, "InternalError",
                        "Internal error occurred: injected fault on request " + std::to_string(n),
                        ""}));
    return;
  }
  if (from && *from > current) {
    w.Write(ErrorEvent(TooLargeResourceVersion(std::to_string(*from), std::to_string(current))));
    return;
  }
  uint64_t pos = from.value_or(current);
  if (q.send_initial_events.value_or(!from.has_value())) {
    if (!SendInitialEvents(t, q, &pos, w)) return;
  } else if (pos < floor_rv) {
    w.Write(ErrorEvent(TooOldResourceVersion(std::to_string(pos), std::to_string(floor_rv))));
    return;
  }
  if (f.stall.Contains(n)) {
    NoteFault("stall");
    return Stall(w);
  }
  StreamEvents(t, q, n, pos, deadline, w);
}

bool Api::SendInitialEvents(const Target& t, const Query& q, uint64_t* pos,
                            http::ResponseWriter& w) {
  ListQuery lq;
  lq.namespace_ = t.namespace_;
  if (q.has_selector())
    lq.filter = [&q](const StoredObject& o) { return q.Matches(*o.object, o.fields); };
  StatusOr<ListResult> list = state_->List(t.type, lq);
  if (!list.ok()) return false;  // cannot happen at the current resourceVersion
  std::vector<std::string_view> pieces;
  pieces.reserve(3 * list->items.size());
  for (const StoredPtr& o : list->items) {
    pieces.push_back(kAddedPrefix);
    pieces.push_back(o->object->json());
    pieces.push_back(kEventSuffix);
  }
  if (!WriteBody(w, pieces, 3 * kWatchBatch)) return false;
  *pos = list->rv;
  if (q.send_initial_events.value_or(false) && q.bookmarks) {
    return w.Write(Bookmark(*t.rt, *pos, true));
  }
  return true;
}

void Api::StreamEvents(const Target& t, const Query& q, uint64_t n, uint64_t pos,
                       std::chrono::steady_clock::time_point deadline, http::ResponseWriter& w) {
  const Faults& f = options_.faults;
  const bool cut = f.cut.Contains(n);
  const bool malformed = f.malformed.Contains(n);
  auto next_bookmark = Clock::now() + options_.bookmark_interval;
  std::deque<std::string> scratch;
  std::vector<std::string_view> pieces;
  for (;;) {
    auto now = Clock::now();
    if (now >= deadline) {
      if (q.bookmarks) w.Write(Bookmark(*t.rt, pos, false));
      return;
    }
    auto wake =
        std::min({deadline, now + std::chrono::seconds(1), q.bookmarks ? next_bookmark : deadline});
    WatchBatch batch = state_->Wait(t.type, pos, kWatchBatch, wake);
    if (batch.stopped || batch.expired) return;  // a watcher that fell behind the history is closed
    scratch.clear();
    pieces.clear();
    EncodeEvents(batch, q, &scratch, &pieces);
    if (!pieces.empty() && cut) {
      NoteFault("cut");
      std::string event = std::string(pieces[0]) + std::string(pieces[1]);
      w.Write(std::string_view(event).substr(0, event.size() / 2));
      return w.Cut();
    }
    if (!pieces.empty() && malformed) {
      NoteFault("malformed");
      w.Write(std::string(pieces[0]) + R"({"kind":")" + t.rt->kind + R"(","metadata":{"name":}}})" +
              "\n");
      return;
    }
    if (!pieces.empty() && !w.Write(pieces)) return;
    pos = batch.position;
    if (q.bookmarks && Clock::now() >= next_bookmark) {
      if (!w.Write(Bookmark(*t.rt, pos, false))) return;
      next_bookmark = Clock::now() + options_.bookmark_interval;
    }
    if (w.PeerGone()) return;
  }
}

}  // namespace kcache::serve
