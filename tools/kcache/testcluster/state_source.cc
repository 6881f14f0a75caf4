// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/state_source.h"

#include <string>
#include <utility>

namespace kcache::serve {
namespace {

// A list read whole under the state's lock: the page and the object after
// it (the front end reads one more), or everything.
class StateCursor : public ListCursor {
 public:
  StateCursor(ListResult result, bool counted) : result_(std::move(result)), counted_(counted) {}

  uint64_t rv() const override { return result_.rv; }

  StatusOr<bool> Next(std::string* key, ObjectPtr* object) override {
    if (next_ == result_.items.size()) return false;
    const StoredPtr& o = result_.items[next_++];
    *key = o->key;
    *object = o->object;
    return true;
  }

  std::optional<int64_t> Remaining() const override {
    if (!counted_) return std::nullopt;
    const auto unread = static_cast<int64_t>(result_.items.size() - next_);
    return unread + (result_.next_key.empty() ? 0 : result_.remaining);
  }

 private:
  const ListResult result_;
  const bool counted_;
  size_t next_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<ListCursor>> StateSource::OpenList(int type, const ListRequest& request) {
  const ListPlan& plan = request.plan;
  ListQuery q;
  q.namespace_ = request.namespace_;
  if (request.filter) {
    q.filter = [&request](const StoredObject& o) { return request.filter(*o.object); };
  }
  q.limit = plan.limit > 0 ? plan.limit + 1 : 0;
  q.count_remaining = request.count_remaining;
  q.start_key = plan.start;
  q.remaining_from_start = plan.remaining;
  if (plan.read == ListPlan::Read::kExact) {
    // etcd refuses a future revision; the apiserver passes its error on.
    if (!plan.continuing && plan.rv > state_->current_rv()) {
      return Status::FailedPrecondition("etcdserver: mvcc: required revision is a future revision");
    }
    q.at_rv = plan.rv;
  } else if (plan.read == ListPlan::Read::kNotOlderThan && plan.rv > state_->current_rv()) {
    q.at_rv = plan.rv;  // refused by List as not reached
  }
  StatusOr<ListResult> result = state_->List(type, q);
  if (!result.ok() && result.status().code() == StatusCode::kFailedPrecondition) {
    return Status::DeadlineExceeded(result.status().message());  // not reached
  }
  if (!result.ok()) return result.status();
  return std::unique_ptr<ListCursor>(
      new StateCursor(std::move(result).value(), request.count_remaining));
}

Status StateSource::Reach(int /*type*/, uint64_t rv, uint64_t* current) {
  *current = state_->current_rv();
  if (rv > *current) {
    return Status::DeadlineExceeded("resourceVersion " + std::to_string(rv) + " is newer than " +
                                    std::to_string(*current));
  }
  return Status::OK();
}

StatusOr<ChangeBatch> StateSource::Changes(int type, uint64_t after, size_t max,
                                           std::chrono::steady_clock::time_point until) {
  WatchBatch batch = state_->Wait(type, after, max, until);
  if (batch.stopped) return Status::Cancelled("the server is stopping");
  if (batch.expired) return Status::Expired(std::to_string(state_->floor(type)));
  ChangeBatch out;
  out.position = batch.position;
  out.events.reserve(batch.events.size());
  for (const Event& e : batch.events) {
    out.events.push_back(
        SourceEvent{e.type, e.rv, e.object->object, e.prev ? e.prev->object : nullptr});
  }
  return out;
}

}  // namespace kcache::serve
