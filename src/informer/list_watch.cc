// SPDX-License-Identifier: Apache-2.0

// What a reflector lists and watches through, and what it writes into, as
// most programs make them (NewListWatch over the REST client, NewStoreSink
// over a Store), and the shared record of whether a server offers
// streaming lists (StreamingSupport).

#include <mutex>

#include "exec/fiber.h"
#include "informer/events.h"
#include "kcache/reflector.h"

namespace kcache {
namespace {

class RestListWatch final : public ListerWatcher {
 public:
  RestListWatch(std::shared_ptr<RestClient> client, ResourceRef resource, std::string labels,
                std::string fields)
      : client_(std::move(client)),
        resource_(std::move(resource)),
        labels_(std::move(labels)),
        fields_(std::move(fields)) {}

  StatusOr<ObjectList> List(const ListOptions& options) override {
    return client_->List(resource_, WithSelectors(options));
  }
  StatusOr<std::unique_ptr<WatchStream>> Watch(const ListOptions& options) override {
    return client_->Watch(resource_, WithSelectors(options));
  }
  std::string Describe() const override {
    std::string d = resource_.gvr.group_resource().String();
    if (resource_.namespaced && !resource_.namespace_.empty())
      d += " in namespace " + resource_.namespace_;
    if (!labels_.empty()) d += " (-l " + labels_ + ")";
    if (!fields_.empty()) d += " (--field-selector " + fields_ + ")";
    return d;
  }
  GroupResource Resource() const override { return resource_.gvr.group_resource(); }
  std::optional<ResourceRef> Ref() const override { return resource_; }
  bool SharesThreads() const override { return client_->SharesThreads(); }

 private:
  ListOptions WithSelectors(ListOptions o) const {
    o.label_selector = labels_;
    o.field_selector = fields_;
    return o;
  }

  std::shared_ptr<RestClient> client_;
  ResourceRef resource_;
  std::string labels_, fields_;
};

class StoreSink final : public ReflectorSink {
 public:
  explicit StoreSink(std::shared_ptr<Store> store) : store_(std::move(store)) {}
  Status Apply(std::vector<WatchEvent> events, std::string rv) override {
    Transaction txn;
    for (WatchEvent& e : events) informer::AppendToTransaction(std::move(e), &txn);
    txn.resource_version = std::move(rv);
    return store_->Commit(txn, nullptr);
  }
  StatusOr<std::unique_ptr<ReplaceSession>> BeginReplace() override {
    return store_->BeginReplace(nullptr);
  }
  StatusOr<std::optional<CutShortRelist>> GetCutShortRelist() const override {
    return store_->GetCutShortRelist();
  }
  StatusOr<std::unique_ptr<ReplaceSession>> ContinueReplace() override {
    return store_->ContinueReplace(nullptr);
  }
  std::string ResumeResourceVersion() const override { return store_->LastSyncResourceVersion(); }

 private:
  std::shared_ptr<Store> store_;
};

class StreamingSupportImpl final : public StreamingSupport {
 public:
  Decision Decide(std::stop_token stop) override {
    std::unique_lock l(mu_);
    for (;;) {
      if (known_ == Outcome::kOpened) return Decision::kStream;
      if (known_ == Outcome::kRefused) return Decision::kList;
      if (!trying_) {
        trying_ = true;
        return Decision::kTryAndReport;
      }
      // Stopped while another tries: stream; the stop ends it at once.
      if (!cv_.wait(l, stop, [&] { return !trying_ || known_ != Outcome::kUnknown; }))
        return Decision::kStream;
    }
  }
  void Report(Outcome outcome) override {
    {
      std::lock_guard l(mu_);
      if (outcome != Outcome::kUnknown && known_ != Outcome::kRefused) known_ = outcome;
      trying_ = false;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  exec::CondVar cv_;
  Outcome known_ = Outcome::kUnknown;  // guarded by mu_
  bool trying_ = false;                // guarded by mu_
};

}  // namespace

std::shared_ptr<StreamingSupport> StreamingSupport::Create() {
  return std::make_shared<StreamingSupportImpl>();
}

std::shared_ptr<ListerWatcher> NewListWatch(std::shared_ptr<RestClient> client,
                                            ResourceRef resource, std::string label_selector,
                                            std::string field_selector) {
  return std::make_shared<RestListWatch>(std::move(client), std::move(resource),
                                         std::move(label_selector), std::move(field_selector));
}

std::shared_ptr<ReflectorSink> NewStoreSink(std::shared_ptr<Store> store) {
  return std::make_shared<StoreSink>(std::move(store));
}

}  // namespace kcache
