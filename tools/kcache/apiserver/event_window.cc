// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/event_window.h"

#include <algorithm>
#include <utility>

namespace kcache::serve {
namespace {

size_t Bytes(const SourceEvent& e) {
  return (e.object ? e.object->json().size() : 0) + (e.prev ? e.prev->json().size() : 0);
}

}  // namespace

ChangeBatch EventWindow::CopyLocked(uint64_t after, size_t max) const {
  auto it = std::upper_bound(events_.begin(), events_.end(), after,
                             [](uint64_t rv, const SourceEvent& e) { return rv < e.rv; });
  ChangeBatch batch;
  const size_t n = std::min(max, static_cast<size_t>(events_.end() - it));
  batch.events.assign(it, it + static_cast<std::ptrdiff_t>(n));
  batch.position = it + static_cast<std::ptrdiff_t>(n) == events_.end() ? end_
                   : n > 0                                              ? batch.events.back().rv
                                                                        : after;
  return batch;
}

StatusOr<std::optional<ChangeBatch>> EventWindow::Read(uint64_t after, size_t max,
                                                       uint64_t generation, const Fill& fill) {
  // Answers from the window if it can; false when it must be extended.
  auto answer = [&](std::optional<ChangeBatch>* out) {
    if (after < start_) {
      *out = std::nullopt;
      return true;
    }
    if (after < end_) {
      *out = CopyLocked(after, max);
      return true;
    }
    if (filled_at_ == generation) {  // nothing newer in this generation
      *out = ChangeBatch{{}, after};
      return true;
    }
    return false;
  };
  std::optional<ChangeBatch> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_ || after > end_) {
      open_ = true;
      start_ = end_ = after;
      events_.clear();
      bytes_ = 0;
      filled_at_.reset();
    }
    if (answer(&out)) return out;
  }
  std::lock_guard<std::mutex> filling(fill_mu_);
  {
    // Another caller may have extended the window while this one waited.
    std::lock_guard<std::mutex> lock(mu_);
    if (answer(&out)) return out;
  }
  StatusOr<ChangeBatch> read = fill(after, max);
  std::lock_guard<std::mutex> lock(mu_);
  if (!read.ok()) {
    open_ = false;
    events_.clear();
    bytes_ = 0;
    return read.status();
  }
  if (end_ != after) return std::optional<ChangeBatch>(std::move(read).value());  // started anew
  for (const SourceEvent& e : read->events) {
    bytes_ += Bytes(e);
    events_.push_back(e);
  }
  end_ = std::max(end_, read->position);
  // A full read may have left more behind; a short one read to the source's end.
  if (read->events.size() < max) {
    filled_at_ = generation;
  } else {
    filled_at_.reset();
  }
  while (!events_.empty() &&
         (events_.size() > options_.max_events || bytes_ > options_.max_bytes)) {
    start_ = events_.front().rv;
    bytes_ -= Bytes(events_.front());
    events_.pop_front();
  }
  if (after < start_) return std::optional<ChangeBatch>(std::move(read).value());
  return std::optional<ChangeBatch>(CopyLocked(after, max));
}

EventWindow::Extent EventWindow::extent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {start_, end_, events_.size(), bytes_};
}

}  // namespace kcache::serve
