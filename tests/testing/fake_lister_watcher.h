// SPDX-License-Identifier: Apache-2.0

// A scripted ListerWatcher: each List and Watch call takes the next answer
// queued for it (an error, a list, or a stream the test feeds), and is
// recorded with its options.
#ifndef KCACHE_TESTS_TESTING_FAKE_LISTER_WATCHER_H_
#define KCACHE_TESTS_TESTING_FAKE_LISTER_WATCHER_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>
#include <vector>

#include "kcache/reflector.h"

namespace kcache::testing {

// A watch stream fed by the test. Next() blocks until something is pushed,
// End() is called, or the consumer cancels.
class FakeWatchStream final : public WatchStream {
 public:
  void Push(WatchEvent e) { Add(Item(std::move(e))); }
  void Fail(Status st) { Add(Item(std::move(st))); }
  void End() { Add(Item(std::monostate())); }

  StatusOr<std::optional<WatchEvent>> Next() override {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return cancelled_ || !items_.empty(); });
    if (cancelled_) return Status::Cancelled("cancelled");
    Item it = std::move(items_.front());
    items_.pop_front();
    if (auto* e = std::get_if<WatchEvent>(&it)) return std::optional<WatchEvent>(std::move(*e));
    if (auto* st = std::get_if<Status>(&it)) return *st;
    return std::optional<WatchEvent>();
  }
  bool Ready() override {
    std::lock_guard l(mu_);
    return !items_.empty();
  }
  void Cancel() override {
    std::lock_guard l(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  using Item = std::variant<std::monostate, WatchEvent, Status>;
  void Add(Item it) {
    std::lock_guard l(mu_);
    items_.push_back(std::move(it));
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  bool cancelled_ = false;
};

// A stream that owns a share of a FakeWatchStream the test keeps feeding.
class ForwardingWatchStream final : public WatchStream {
 public:
  explicit ForwardingWatchStream(std::shared_ptr<FakeWatchStream> s) : s_(std::move(s)) {}
  StatusOr<std::optional<WatchEvent>> Next() override { return s_->Next(); }
  bool Ready() override { return s_->Ready(); }
  void Cancel() override { s_->Cancel(); }

 private:
  std::shared_ptr<FakeWatchStream> s_;
};

class FakeListerWatcher final : public ListerWatcher {
 public:
  void QueueList(StatusOr<ObjectList> answer) {
    std::lock_guard l(mu_);
    lists_.push_back(std::move(answer));
  }
  // The stream handed to the next Watch call; the test keeps feeding it.
  std::shared_ptr<FakeWatchStream> QueueWatch() {
    auto s = std::make_shared<FakeWatchStream>();
    std::lock_guard l(mu_);
    watches_.push_back(s);
    return s;
  }
  void QueueWatchError(Status st) {
    std::lock_guard l(mu_);
    watches_.push_back(std::move(st));
  }

  StatusOr<ObjectList> List(const ListOptions& options) override {
    std::lock_guard l(mu_);
    list_calls_.push_back(options);
    cv_.notify_all();
    if (lists_.empty()) return Status::Unavailable("no list queued");
    auto a = std::move(lists_.front());
    lists_.pop_front();
    return a;
  }
  StatusOr<std::unique_ptr<WatchStream>> Watch(const ListOptions& options) override {
    std::lock_guard l(mu_);
    watch_calls_.push_back(options);
    cv_.notify_all();
    if (watches_.empty()) return Status::Unavailable("no watch queued");
    auto a = std::move(watches_.front());
    watches_.pop_front();
    if (auto* st = std::get_if<Status>(&a)) return *st;
    // The reflector owns a forwarding stream; the test keeps the real one.
    return std::unique_ptr<WatchStream>(
        new ForwardingWatchStream(std::get<std::shared_ptr<FakeWatchStream>>(a)));
  }
  std::string Describe() const override { return "fakes"; }

  std::vector<ListOptions> list_calls() const {
    std::lock_guard l(mu_);
    return list_calls_;
  }
  std::vector<ListOptions> watch_calls() const {
    std::lock_guard l(mu_);
    return watch_calls_;
  }
  // Blocks until at least `lists` List and `watches` Watch calls were made.
  void WaitForCalls(size_t lists, size_t watches) {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return list_calls_.size() >= lists && watch_calls_.size() >= watches; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StatusOr<ObjectList>> lists_;
  std::deque<std::variant<std::shared_ptr<FakeWatchStream>, Status>> watches_;
  std::vector<ListOptions> list_calls_;
  std::vector<ListOptions> watch_calls_;
};

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_FAKE_LISTER_WATCHER_H_
