// SPDX-License-Identifier: Apache-2.0

#include "informer/read_ahead.h"

#include <pthread.h>

namespace kcache::informer {
namespace {

size_t Bytes(const StatusOr<std::optional<WatchEvent>>& item) {
  return item.ok() && *item && (**item).object ? (**item).object->byte_size() : 0;
}

bool Final(const StatusOr<std::optional<WatchEvent>>& item) { return !item.ok() || !*item; }

}  // namespace

ReadAheadStream::ReadAheadStream(std::unique_ptr<WatchStream> inner, size_t max_bytes)
    : inner_(std::move(inner)), max_bytes_(max_bytes) {
  if (exec::InFiber()) {
    fiber_ = exec::Spawn([this] { Run(); });
  } else {
    thread_ = std::thread([this] { Run(); });
    pthread_setname_np(thread_.native_handle(), "kcache-decode");
  }
}

ReadAheadStream::~ReadAheadStream() {
  Cancel();
  if (fiber_) fiber_->Join();
  if (thread_.joinable()) thread_.join();
}

void ReadAheadStream::Run() {
  for (;;) {
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return cancelled_ || bytes_ < max_bytes_ || queue_.empty(); });
      if (cancelled_) return;
    }
    Item item = inner_->Next();  // the slow part, outside the lock
    const bool final = Final(item);
    {
      std::lock_guard l(mu_);
      bytes_ += Bytes(item);
      queue_.push_back(std::move(item));
    }
    cv_.notify_all();
    if (final) return;
  }
}

StatusOr<std::optional<WatchEvent>> ReadAheadStream::Next() {
  if (last_) return *last_;
  std::unique_lock l(mu_);
  cv_.wait(l, [&] { return cancelled_ || !queue_.empty(); });
  if (cancelled_) return Status::Cancelled("watch cancelled");
  Item item = std::move(queue_.front());
  queue_.pop_front();
  bytes_ -= Bytes(item);
  l.unlock();
  cv_.notify_all();
  if (Final(item)) last_ = item;
  return item;
}

bool ReadAheadStream::Ready() {
  if (last_) return true;
  std::lock_guard l(mu_);
  return !queue_.empty();
}

void ReadAheadStream::Cancel() {
  {
    std::lock_guard l(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
  inner_->Cancel();
}

}  // namespace kcache::informer
