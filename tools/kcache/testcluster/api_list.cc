// LIST: validation of the list options, the list at a resourceVersion or
// continue token, and the body (cut, malformed or stalled for a fault).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/kcache/apiserver/api_query.h"
#include "tools/kcache/apiserver/api_reply.h"
#include "tools/kcache/testcluster/api.h"

namespace kcache::serve {

void Api::List(const Target& t, const Query& q, uint64_t n, http::ResponseWriter& w) {
  const Faults& f = options_.faults;
  ListPlan plan;
  if (std::optional<Reply> bad = PlanList(q, &plan)) return SendReply(w, *bad);
  if (f.expire.Contains(n)) {
    NoteFault("expire");
    return SendReply(w, ListTooOld());
  }
  const uint64_t current = state_->current_rv();
  ListQuery lq;
  lq.namespace_ = t.namespace_;
  if (q.has_selector())
    lq.filter = [&q](const StoredObject& o) { return q.Matches(*o.object, o.fields); };
  lq.limit = plan.limit;
  lq.count_remaining = !q.has_selector();
  lq.start_key = plan.start;
  const bool continuing = plan.continuing;
  if (plan.read == ListPlan::Read::kExact) {
    // Read from etcd at that revision; etcd refuses a future one and the
    // apiserver passes its error on as a 500 without a reason.
    if (!continuing && plan.rv > current) {
      return SendReply(w,
                       {500, "", "etcdserver: mvcc: required revision is a future revision", ""});
    }
    lq.at_rv = plan.rv;
  } else if (plan.read == ListPlan::Read::kNotOlderThan && plan.rv > current) {
    lq.at_rv = plan.rv;  // reported below as too large
  }
  StatusOr<ListResult> result = state_->List(t.type, lq);
  if (!result.ok()) {
    if (result.status().code() == StatusCode::kFailedPrecondition) {
      return SendReply(w,
                       TooLargeResourceVersion(std::to_string(lq.at_rv), std::to_string(current)));
    }
    if (continuing) return SendContinueExpired(w, EncodeContinue(current, lq.start_key));
    return SendReply(w, ListTooOld());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    list_items_[t.rt->resource] += result->items.size();
  }
  std::string head = R"({"kind":")" + t.rt->list_kind() + R"(","apiVersion":")" +
                     t.rt->api_version() + R"(","metadata":{"resourceVersion":")" +
                     std::to_string(result->rv) + "\"";
  if (!result->next_key.empty()) {
    head += R"(,"continue":")" + EncodeContinue(result->rv, result->next_key) + "\"";
    if (result->remaining >= 0)
      head += R"(,"remainingItemCount":)" + std::to_string(result->remaining);
  }
  head += R"(},"items":[)";
  std::vector<std::string_view> pieces;
  pieces.reserve(2 * result->items.size() + 2);
  pieces.push_back(head);
  for (size_t i = 0; i < result->items.size(); ++i) {
    if (i) pieces.push_back(",");
    pieces.push_back(result->items[i]->object->json());
  }
  pieces.push_back("]}");
  if (!w.Begin(200, {{"Content-Type", "application/json"}})) return;
  size_t total = 0;
  for (std::string_view p : pieces) total += p.size();
  const char* kind = f.cut.Contains(n)         ? "cut"
                     : f.malformed.Contains(n) ? "malformed"
                     : f.stall.Contains(n)     ? "stall"
                                               : nullptr;
  if (!kind) {
    WriteBody(w, pieces, 2 * kListItemsPerChunk);
    return;
  }
  NoteFault(kind);
  if (!WriteBody(w, pieces, 2 * kListItemsPerChunk, total / 2) && w.PeerGone()) return;
  if (std::string_view(kind) == "cut") return w.Cut();
  if (std::string_view(kind) == "stall") return Stall(w);
  w.Write("\"]}");  // malformed: the list ends inside an item
  w.End();
}

}  // namespace kcache::serve
