// SPDX-License-Identifier: Apache-2.0

#include "kcache/event_recorder.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "kcache/rest_client.h"
#include "util/rfc3339.h"

namespace kcache {
namespace {

constexpr char kCombined[] = "(combined from similar events): ";
constexpr size_t kMaxKeys = 4096;

using json::Dump;

struct Pending {
  nlohmann::json involved;  // involvedObject
  std::string namespace_;   // where the Event is written
  std::string name;         // the object's name, the Event name's prefix
  EventType type;
  std::string reason, message;
  std::chrono::system_clock::time_point at;
  uint64_t seq;
};

class Recorder final : public EventRecorder {
 public:
  Recorder(std::shared_ptr<RestClient> client, EventRecorderOptions o)
      : client_(std::move(client)), o_(std::move(o)) {
    worker_ = std::thread([this] { Work(); });
  }

  ~Recorder() override {
    Flush(std::chrono::seconds(10));
    {
      std::lock_guard l(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  void Event(const Object& object, EventType type, const std::string& reason,
             const std::string& message, const std::string& api_version,
             const std::string& kind) override {
    Pending p;
    p.involved = {{"kind", kind.empty() ? object.kind() : kind},
                  {"apiVersion", api_version.empty() ? object.api_version() : api_version},
                  {"name", object.name()},
                  {"uid", object.meta().uid},
                  {"resourceVersion", object.resource_version()}};
    if (!object.namespace_().empty()) p.involved["namespace"] = object.namespace_();
    p.namespace_ = object.namespace_().empty() ? "default" : object.namespace_();
    p.name = object.name();
    p.type = type;
    p.reason = reason;
    p.message = message;
    p.at = std::chrono::system_clock::now();
    std::lock_guard l(mu_);
    if (closed_ || queue_.size() >= o_.queue_limit) {
      ++stats_.dropped;
      return;
    }
    p.seq = ++queued_;
    queue_.push_back(std::move(p));
    cv_.notify_all();
  }

  bool Flush(std::chrono::milliseconds timeout) override {
    std::unique_lock l(mu_);
    const uint64_t want = queued_;
    return cv_.wait_for(l, timeout, [&] { return written_ >= want; });
  }

  EventRecorderStats stats() const override {
    std::lock_guard l(mu_);
    return stats_;
  }

 private:
  void Work() {
    for (;;) {
      Pending p;
      {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty()) return;
        p = std::move(queue_.front());
        queue_.pop_front();
      }
      const Outcome outcome = Write(p);  // no lock held: a request
      std::lock_guard l(mu_);
      if (outcome == Outcome::kCreated) ++stats_.created;
      if (outcome == Outcome::kUpdated) ++stats_.updated;
      if (outcome == Outcome::kFailed) ++stats_.failed;
      written_ = p.seq;
      cv_.notify_all();
    }
  }

  enum class Outcome { kCreated, kUpdated, kFailed };

  // What was written for one key: the Event's name and count.
  struct Written {
    std::string name;
    int64_t count = 0;
  };
  // Similar events (one object, type and reason) seen in the window.
  struct Similar {
    std::set<std::string> messages;
    std::chrono::system_clock::time_point last;
  };

  // client-go's EventCorrelator: aggregate, then deduplicate. Only the
  // worker thread reads and writes similar_ and written_events_.
  Outcome Write(Pending& p) {
    const std::string type = p.type == EventType::kWarning ? "Warning" : "Normal";
    const std::string similar_key = Dump(p.involved) + "\n" + type + "\n" + p.reason;
    // Bounded, as client-go's LRU caches are: past 4096 keys the history
    // restarts (a repeat then makes a new Event instead of a count).
    if (similar_.size() > kMaxKeys || written_events_.size() > kMaxKeys) {
      similar_.clear();
      written_events_.clear();
    }
    Similar& s = similar_[similar_key];
    if (p.at - s.last > o_.aggregation_window) s.messages.clear();
    s.last = p.at;
    s.messages.insert(p.message);
    std::string key = similar_key + "\n" + p.message;
    if (static_cast<int>(s.messages.size()) >= o_.max_similar) {
      p.message = kCombined + p.message;
      key = similar_key + "\n" + kCombined;
    }
    const ResourceRef events{{"", "v1", "events"}, true, p.namespace_};
    const std::string now = util::FormatRfc3339(p.at);  // metav1.Time
    auto w = written_events_.find(key);
    if (w != written_events_.end()) {
      nlohmann::json patch = {
          {"count", w->second.count + 1}, {"lastTimestamp", now}, {"message", p.message}};
      StatusOr<ObjectPtr> patched =
          client_->Patch(events, w->second.name, PatchType::kMerge, Dump(patch));
      if (patched.ok()) {
        ++w->second.count;
        return Outcome::kUpdated;
      }
      if (!patched.status().IsNotFound()) return Outcome::kFailed;
      written_events_.erase(w);  // deleted meanwhile (events expire): create again
    }
    const auto nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(p.at.time_since_epoch()).count();
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanos));
    const std::string name = p.name + suffix;
    nlohmann::json event = {{"apiVersion", "v1"},
                            {"kind", "Event"},
                            {"metadata", {{"name", name}, {"namespace", p.namespace_}}},
                            {"involvedObject", p.involved},
                            {"reason", p.reason},
                            {"message", p.message},
                            {"source", {{"component", o_.component}}},
                            {"firstTimestamp", now},
                            {"lastTimestamp", now},
                            {"count", 1},
                            {"type", type},
                            {"reportingComponent", o_.component},
                            {"reportingInstance", o_.host}};
    if (!o_.host.empty()) event["source"]["host"] = o_.host;
    if (!client_->Create(events, Dump(event)).ok()) return Outcome::kFailed;
    written_events_[key] = Written{name, 1};
    return Outcome::kCreated;
  }

  const std::shared_ptr<RestClient> client_;
  const EventRecorderOptions o_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  uint64_t queued_ = 0;        // guarded by mu_: the last seq queued
  uint64_t written_ = 0;       // guarded by mu_: the last seq written
  bool closed_ = false;        // guarded by mu_
  EventRecorderStats stats_;   // guarded by mu_

  std::map<std::string, Similar> similar_;         // the worker's
  std::map<std::string, Written> written_events_;  // the worker's
  std::thread worker_;
};

}  // namespace

StatusOr<std::shared_ptr<EventRecorder>> EventRecorder::Create(const RestConfig& config,
                                                               EventRecorderOptions options) {
  if (options.component.empty()) {
    return Status::InvalidArgument("event recorder: component is required");
  }
  if (options.max_similar < 1 || options.queue_limit < 1) {
    return Status::InvalidArgument("event recorder: max_similar and queue_limit must be positive");
  }
  RestClientOptions o;
  o.request_timeout = std::chrono::seconds(10);
  KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<RestClient> client, RestClient::Create(config, o));
  return std::shared_ptr<EventRecorder>(
      std::make_shared<Recorder>(std::move(client), std::move(options)));
}

}  // namespace kcache
