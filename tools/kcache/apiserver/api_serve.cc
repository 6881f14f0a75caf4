// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/api_serve.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

namespace kcache::serve {
namespace {

using Clock = std::chrono::steady_clock;

// An unpaginated list or the initial events go out in chunks of about this
// many bytes, whatever the size of the type.
constexpr size_t kFlushBytes = size_t{1} << 20;

const serve::http::Headers kJson = {{"Content-Type", "application/json"}};

// Pieces of a body to send, and what keeps them alive until they are sent.
class Body {
 public:
  void Add(std::string_view s) {
    pieces_.push_back(s);
    bytes_ += s.size();
  }
  void Own(std::string s) { Add(owned_.emplace_back(std::move(s))); }
  // `o` as it is: its own bytes, kept alive here.
  void AddObject(const ObjectPtr& o) {
    Add(o->json());
    kept_.push_back(o);
  }
  void Clear() {
    pieces_.clear();
    owned_.clear();
    kept_.clear();
    bytes_ = 0;
  }
  const std::vector<std::string_view>& pieces() const { return pieces_; }
  size_t bytes() const { return bytes_; }
  bool empty() const { return pieces_.empty(); }

 private:
  std::vector<std::string_view> pieces_;
  std::deque<std::string> owned_;  // a deque: growing it moves no string
  std::vector<ObjectPtr> kept_;
  size_t bytes_ = 0;
};

Reply Internal(const Status& st) {
  return Reply{500, "InternalError", "Internal error occurred: " + std::string(st.message()), ""};
}

// How the apiserver answers a source's refusal that is not about versions.
Reply Refusal(const Status& st) {
  if (st.code() == StatusCode::kUnavailable) {
    // As while the apiserver's watch cache (re)initializes.
    return Reply{429, "TooManyRequests",
                 "Too many requests, please try again later: storage is (re)initializing", "", 1};
  }
  if (st.code() == StatusCode::kFailedPrecondition)
    return Reply{500, "", std::string(st.message()), ""};
  return Internal(st);
}

// The current version of `t`'s type, for an error that names it.
uint64_t Current(ApiSource& source, const Target& t) {
  uint64_t current = 0;
  (void)source.Reach(t.type, 0, &current);
  return current;
}

std::function<bool(const Object&)> Selection(const Target& t, const Query& q) {
  if (!q.has_selector() && t.namespace_.empty()) return nullptr;
  return [&t, &q](const Object& o) {
    return (t.namespace_.empty() || o.namespace_() == t.namespace_) &&
           q.labels.Matches(o.labels()) && q.fields.Matches(o);
  };
}

// {"resourceVersion":..,"continue":..,"remainingItemCount":..}
std::string ListMetadata(uint64_t rv, const std::string& token, std::optional<int64_t> remaining) {
  std::string m = R"({"resourceVersion":")" + std::to_string(rv) + "\"";
  if (!token.empty()) {
    m += R"(,"continue":")" + token + "\"";
    if (remaining) m += R"(,"remainingItemCount":)" + std::to_string(*remaining);
  }
  return m + "}";
}

// The list's opening up to its items (or a Table's up to its rows).
std::string ListHead(const Target& t, const TableWriter* tables, const std::string& metadata) {
  if (tables) return tables->Head(metadata, true);
  return R"({"kind":")" + t.rt->list_kind() + R"(","apiVersion":")" + t.rt->api_version() +
         R"(","metadata":)" + metadata + R"(,"items":[)";
}

void AddItem(const ListCall& call, const ObjectPtr& o, Body* body) {
  if (call.tables) return body->Own(call.tables->Row(*o));
  body->AddObject(Shown(o, call.drop_managed_fields));
}

const char* FaultName(BodyFault fault) {
  switch (fault) {
    case BodyFault::kCut:
      return "cut";
    case BodyFault::kMalformed:
      return "malformed";
    case BodyFault::kStall:
      return "stall";
    case BodyFault::kNone:
      break;
  }
  return "";
}

// Sends a list that has all its objects in `body`, with the call's fault.
void SendListBody(const Body& body, const ListCall& call, serve::http::ResponseWriter& w) {
  if (!w.Begin(200, kJson)) return;
  const BodyFault fault = call.fault;
  if (fault == BodyFault::kNone) {
    WriteBody(w, body.pieces(), 2 * kListItemsPerChunk);
    return;
  }
  if (call.injected) call.injected(FaultName(fault));
  if (!WriteBody(w, body.pieces(), 2 * kListItemsPerChunk, body.bytes() / 2) && w.PeerGone()) {
    return;
  }
  if (fault == BodyFault::kCut) return w.Cut();
  if (fault == BodyFault::kStall) return Stall(w);
  w.Write("\"]}");  // malformed: the list ends inside an item
  w.End();
}

}  // namespace

bool AcceptDropsManagedFields(std::string_view accept) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    size_t semi = range.find(';');
    const std::string_view type = trim(range.substr(0, semi));
    if (type != "application/json" && type != "application/*" && type != "*/*") continue;
    bool drop = false;
    while (semi != std::string_view::npos) {
      range = range.substr(semi + 1);
      semi = range.find(';');
      std::string_view param = trim(range.substr(0, semi));
      if (param.substr(0, 5) != "drop=") continue;
      for (std::string_view targets = param.substr(5); !targets.empty();) {
        size_t plus = targets.find('+');
        if (targets.substr(0, plus) == "metadata.managedFields") drop = true;
        targets = plus == std::string_view::npos ? std::string_view() : targets.substr(plus + 1);
      }
    }
    return drop;
  }
  return false;
}

ObjectPtr Shown(const ObjectPtr& o, bool drop) {
  if (!drop) return o;
  StatusOr<ObjectPtr> dropped = DropManagedFields(o);
  return dropped.ok() ? *std::move(dropped) : o;
}

size_t ServeList(ApiSource& source, const Target& t, const Query& q, const ListCall& call,
                 serve::http::ResponseWriter& w) {
  ListRequest request;
  if (std::optional<Reply> bad = PlanList(q, &request.plan)) return SendReply(w, *bad), 0;
  const ListPlan& plan = request.plan;
  request.namespace_ = t.namespace_;
  request.filter = Selection(t, q);
  request.count_remaining = !q.has_selector();
  StatusOr<std::unique_ptr<ListCursor>> opened = source.OpenList(t.type, request);
  if (!opened.ok()) {
    const Status& st = opened.status();
    if (st.code() == StatusCode::kExpired && plan.continuing) {
      SendContinueExpired(w, EncodeContinue(Current(source, t), plan.start));
    } else if (st.code() == StatusCode::kExpired) {
      SendReply(w, ListTooOld());
    } else if (st.code() == StatusCode::kDeadlineExceeded) {
      SendReply(
          w, TooLargeResourceVersion(std::to_string(plan.rv), std::to_string(Current(source, t))));
    } else {
      SendReply(w, Refusal(st));
    }
    return 0;
  }
  ListCursor& cursor = **opened;
  const TableWriter* tables = call.tables;
  std::string key;
  ObjectPtr o;
  Body body;
  size_t sent = 0;
  if (plan.limit == 0 && call.fault == BodyFault::kNone) {
    // Unpaginated (informers list this way): streamed as read.
    StatusOr<bool> more = cursor.Next(&key, &o);
    if (!more.ok()) return SendReply(w, Internal(more.status())), 0;
    if (!w.Begin(200, kJson)) return 0;
    body.Own(ListHead(t, tables, ListMetadata(cursor.rv(), "", std::nullopt)));
    for (; *more; ++sent) {
      if (sent) body.Add(",");
      AddItem(call, o, &body);
      if (body.bytes() >= kFlushBytes) {
        if (!w.Write(body.pieces())) return sent;
        body.Clear();
      }
      more = cursor.Next(&key, &o);
      if (!more.ok()) return w.Cut(), sent;  // a short body, not a short list
    }
    body.Add("]}");
    w.Write(body.pieces());
    return sent;
  }
  // A page (or a body for a fault): its continue token comes before its
  // items, so the page is read first. One more object is read: the token
  // starts at it, and the last page has none, as from the apiserver.
  std::vector<ObjectPtr> page;
  std::string next;
  for (;;) {
    StatusOr<bool> more = cursor.Next(&key, &o);
    if (!more.ok()) return SendReply(w, Internal(more.status())), 0;
    if (!*more) break;
    if (plan.limit > 0 && page.size() == plan.limit) {
      next = key;
      break;
    }
    page.push_back(std::move(o));
  }
  std::string token;
  std::optional<int64_t> remaining;
  if (!next.empty()) {
    if (std::optional<int64_t> after = cursor.Remaining()) remaining = *after + 1;
    token = EncodeContinue(cursor.rv(), next, remaining);
  }
  body.Own(ListHead(t, tables, ListMetadata(cursor.rv(), token, remaining)));
  for (size_t i = 0; i < page.size(); ++i) {
    if (i) body.Add(",");
    AddItem(call, page[i], &body);
  }
  body.Add("]}");
  SendListBody(body, call, w);
  return page.size();
}

namespace {

// A watch's events, from its initial list (if asked) to its deadline, on a
// stream whose headers went out.
class WatchStream {
 public:
  WatchStream(ApiSource& source, const Target& t, const Query& q, const WatchCall& call,
              serve::http::ResponseWriter& w)
      : source_(source), t_(t), q_(q), call_(call), w_(w), selected_(Selection(t, q)) {}

  // The objects `pos` holds as ADDED events (and the bookmark that ends
  // them, when asked); `pos` becomes the list's version. False if the
  // stream ended.
  bool SendInitial(uint64_t* pos);
  // The changes after `pos` until `deadline`, the client's leaving or an
  // error.
  void Follow(uint64_t pos, Clock::time_point deadline);

 private:
  bool In(const ObjectPtr& o) const { return o && (!selected_ || selected_(*o)); }
  // One event of `o`, or of `json` (its text, restamped) when set.
  void AddEvent(std::string_view prefix, const ObjectPtr& o, std::string json = "");
  void AddChange(const SourceEvent& e);
  // The injected body fault of a batch, if any: true if it ended the stream.
  bool InjectFault();

  ApiSource& source_;
  const Target& t_;
  const Query& q_;
  const WatchCall& call_;
  serve::http::ResponseWriter& w_;
  const std::function<bool(const Object&)> selected_;
  bool columns_ = true;  // a Table's columns come with the first event only
  Body body_;
};

void WatchStream::AddEvent(std::string_view prefix, const ObjectPtr& o, std::string json) {
  body_.Add(prefix);
  if (const TableWriter* tables = call_.tables) {
    ObjectPtr shown = o;
    if (!json.empty()) {
      StatusOr<ObjectPtr> parsed = Object::Parse(std::move(json));
      if (parsed.ok()) shown = std::move(parsed).value();
    }
    body_.Own(
        tables->Head(R"({"resourceVersion":")" + std::string(shown->resource_version()) + "\"}",
                     columns_) +
        tables->Row(*shown) + "]}");
    columns_ = false;
  } else if (!json.empty()) {
    body_.Own(std::move(json));
  } else {
    body_.AddObject(Shown(o, call_.drop_managed_fields));
  }
  body_.Add(kEventSuffix);
}

bool WatchStream::SendInitial(uint64_t* pos) {
  ListRequest request;
  request.namespace_ = t_.namespace_;
  request.filter = selected_;
  StatusOr<std::unique_ptr<ListCursor>> opened = source_.OpenList(t_.type, request);
  if (!opened.ok()) {
    w_.Write(ErrorEvent(Refusal(opened.status())));
    return false;
  }
  std::string key;
  ObjectPtr o;
  for (;;) {
    StatusOr<bool> more = (*opened)->Next(&key, &o);
    if (!more.ok()) {
      w_.Write(ErrorEvent(Internal(more.status())));
      return false;
    }
    if (*more) AddEvent(kAddedPrefix, o);
    if (!*more || body_.bytes() >= kFlushBytes) {
      if (!body_.empty() && !w_.Write(body_.pieces())) return false;
      body_.Clear();
    }
    if (!*more) break;
  }
  *pos = (*opened)->rv();
  if (q_.send_initial_events.value_or(false) && q_.bookmarks) {
    if (!w_.Write(Bookmark(*t_.rt, *pos, true))) return false;
  }
  return true;
}

void WatchStream::AddChange(const SourceEvent& e) {
  // As the apiserver filters a watch: a change that enters the selection
  // is an addition, one that leaves it a deletion (of the object as it
  // was, stamped with the change's resourceVersion).
  if (!selected_) {
    AddEvent(e.type == EventType::kAdded      ? kAddedPrefix
             : e.type == EventType::kModified ? kModifiedPrefix
                                              : kDeletedPrefix,
             e.object);
    return;
  }
  const bool now_in = e.type != EventType::kDeleted && In(e.object);
  const bool was_in = e.prev                          ? In(e.prev)
                      : e.type == EventType::kDeleted ? In(e.object)
                                                      : e.type == EventType::kModified && now_in;
  if (now_in && was_in) {
    AddEvent(kModifiedPrefix, e.object);
  } else if (now_in) {
    AddEvent(kAddedPrefix, e.object);
  } else if (was_in && e.type == EventType::kDeleted) {
    AddEvent(kDeletedPrefix, e.object);
  } else if (was_in) {
    AddEvent(kDeletedPrefix, e.prev,
             Restamp(Shown(e.prev, call_.drop_managed_fields)->json(), e.rv));
  }
}

bool WatchStream::InjectFault() {
  if (body_.empty()) return false;
  if (call_.fault == BodyFault::kCut) {
    if (call_.injected) call_.injected(FaultName(call_.fault));
    const std::string event = std::string(body_.pieces()[0]) + std::string(body_.pieces()[1]);
    w_.Write(std::string_view(event).substr(0, event.size() / 2));
    w_.Cut();
    return true;
  }
  if (call_.fault == BodyFault::kMalformed) {
    if (call_.injected) call_.injected(FaultName(call_.fault));
    w_.Write(std::string(body_.pieces()[0]) + R"({"kind":")" + t_.rt->kind +
             R"(","metadata":{"name":}}})" + "\n");
    return true;
  }
  return false;
}

void WatchStream::Follow(uint64_t pos, Clock::time_point deadline) {
  auto next_bookmark = Clock::now() + call_.bookmark_interval;
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) {
      if (q_.bookmarks) w_.Write(Bookmark(*t_.rt, pos, false));
      return;
    }
    const auto wake = std::min(
        {deadline, now + std::chrono::seconds(1), q_.bookmarks ? next_bookmark : deadline});
    StatusOr<ChangeBatch> batch = source_.Changes(t_.type, pos, kWatchBatch, wake);
    if (!batch.ok()) {
      const Status& st = batch.status();
      if (st.code() == StatusCode::kCancelled) return;
      // A watcher from before the history the source keeps, or one that fell
      // behind it, must list again: 410, as from the apiserver.
      if (st.code() == StatusCode::kExpired) {
        const std::string floor(st.message());
        w_.Write(
            ErrorEvent(TooOldResourceVersion(std::to_string(pos), floor.empty() ? "0" : floor)));
      } else {
        w_.Write(ErrorEvent(Internal(st)));
      }
      return;
    }
    body_.Clear();
    for (const SourceEvent& e : batch->events) AddChange(e);
    if (InjectFault()) return;
    if (!body_.empty() && !w_.Write(body_.pieces())) return;
    pos = batch->position;
    if (q_.bookmarks && Clock::now() >= next_bookmark) {
      if (!w_.Write(Bookmark(*t_.rt, pos, false))) return;
      next_bookmark = Clock::now() + call_.bookmark_interval;
    }
    if (w_.PeerGone()) return;
  }
}

}  // namespace

void ServeWatch(ApiSource& source, const Target& t, const Query& q, const WatchCall& call,
                serve::http::ResponseWriter& w) {
  std::optional<uint64_t> from;
  if (std::optional<Reply> bad = PlanWatch(q, &from)) return SendReply(w, *bad);
  const auto deadline = Clock::now() + (q.timeout_seconds && *q.timeout_seconds > 0
                                            ? std::chrono::seconds(*q.timeout_seconds)
                                            : call.default_timeout);
  // Read before the headers go out, so that a watch that cannot start gets
  // its answer right behind them, as from kube-apiserver's watch cache: a
  // type being (re)initialised is refused before the stream, a version not
  // reached with an ERROR event.
  uint64_t current = 0;
  const Status reached = source.Reach(t.type, from.value_or(0), &current);
  if (!reached.ok() && reached.code() != StatusCode::kDeadlineExceeded) {
    return SendReply(w, Refusal(reached));
  }
  if (!w.Begin(200,
               {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}})) {
    return;
  }
  if (call.error) {
    w.Write(ErrorEvent(*call.error));
    return;
  }
  if (!reached.ok()) {
    w.Write(ErrorEvent(
        TooLargeResourceVersion(std::to_string(from.value_or(0)), std::to_string(current))));
    return;
  }
  WatchStream stream(source, t, q, call, w);
  uint64_t pos = from.value_or(current);
  if (q.send_initial_events.value_or(!from.has_value()) && !stream.SendInitial(&pos)) return;
  if (call.fault == BodyFault::kStall) {
    if (call.injected) call.injected(FaultName(call.fault));
    return Stall(w);
  }
  stream.Follow(pos, deadline);
}

}  // namespace kcache::serve
