// SPDX-License-Identifier: Apache-2.0

#include "exec/poller.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "exec/fiber.h"

namespace kcache::exec {
namespace {

// One wait, on the waiter's stack. The poller touches it only under its
// own mutex and only while it is registered, so the waiter may leave once
// it has unregistered it.
struct Wait {
  std::mutex mu;
  CondVar cv;
  bool ready = false;  // guarded by mu
};

class Poller {
 public:
  static Poller& Get() {
    // Never destroyed: waits may go on until the process exits.
    static Poller* const p = new Poller();
    return *p;
  }

  FdReady WaitFor(int fd, FdWait what, std::chrono::steady_clock::time_point deadline,
                  std::stop_token stop) {
    Wait w;
    uint64_t id;
    {
      std::lock_guard l(mu_);
      id = ++last_id_;
      waits_.emplace(id, &w);
    }
    epoll_event ev{};
    // One-shot: the poller reports the descriptor once, and the waiter
    // removes it, whichever ends the wait.
    ev.events = (what == FdWait::kReadable ? EPOLLIN | EPOLLRDHUP : EPOLLOUT) | EPOLLONESHOT;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      // Not a pollable descriptor, or one already waited on: the caller's
      // next read or write says what is wrong.
      std::lock_guard l(mu_);
      waits_.erase(id);
      return FdReady::kReady;
    }
    bool ready;
    {
      std::unique_lock l(w.mu);
      if (deadline == std::chrono::steady_clock::time_point::max()) {
        w.cv.wait(l, stop, [&] { return w.ready; });
      } else {
        w.cv.wait_until(l, stop, deadline, [&] { return w.ready; });
      }
      ready = w.ready;
    }
    {
      std::lock_guard l(mu_);
      waits_.erase(id);
    }
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    if (ready) return FdReady::kReady;
    return stop.stop_requested() ? FdReady::kStopped : FdReady::kDeadline;
  }

 private:
  Poller() {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      std::fprintf(stderr, "kcache: epoll_create1: %s\n", std::strerror(errno));
      std::abort();
    }
    std::thread t([this] { Run(); });
    pthread_setname_np(t.native_handle(), "kcache-poll");
    t.detach();
  }

  void Run() {
    epoll_event events[256];
    for (;;) {
      const int n = epoll_wait(epoll_fd_, events, 256, -1);
      if (n < 0) continue;  // EINTR
      std::lock_guard l(mu_);
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;  // a copy: epoll_event is packed
        auto it = waits_.find(id);
        if (it == waits_.end()) continue;  // the wait ended meanwhile
        Wait* w = it->second;
        waits_.erase(it);
        {
          std::lock_guard wl(w->mu);
          w->ready = true;
        }
        w->cv.notify_all();
      }
    }
  }

  int epoll_fd_ = -1;
  std::mutex mu_;
  uint64_t last_id_ = 0;                       // guarded by mu_
  std::unordered_map<uint64_t, Wait*> waits_;  // guarded by mu_
};

}  // namespace

FdReady WaitFd(int fd, FdWait what, std::chrono::steady_clock::time_point deadline,
               std::stop_token stop) {
  if (stop.stop_requested()) return FdReady::kStopped;
  if (std::chrono::steady_clock::now() >= deadline) return FdReady::kDeadline;
  return Poller::Get().WaitFor(fd, what, deadline, stop);
}

}  // namespace kcache::exec
