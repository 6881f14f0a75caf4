// SPDX-License-Identifier: Apache-2.0

#include "exec/fiber.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <thread>

#include "exec/timer.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KCACHE_FIBER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define KCACHE_FIBER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(KCACHE_FIBER_ASAN)
#define KCACHE_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(KCACHE_FIBER_TSAN)
#define KCACHE_FIBER_TSAN 1
#endif
#ifdef KCACHE_FIBER_ASAN
#include <dlfcn.h>
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef KCACHE_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace kcache::exec {

// Stacks are reserved, not committed: a fiber's memory is the pages its
// deepest call touched. Sanitizers' frames are several times larger.
#if defined(KCACHE_FIBER_ASAN) || defined(KCACHE_FIBER_TSAN)
constexpr size_t kStackBytes = 8u << 20;
#else
constexpr size_t kStackBytes = 1u << 20;
#endif

// A carrier thread's own context, to which its fibers switch back.
struct Carrier {
  ucontext_t context;
  Fiber* current = nullptr;
#ifdef KCACHE_FIBER_ASAN
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;
#endif
#ifdef KCACHE_FIBER_TSAN
  void* tsan = nullptr;
#endif
};

namespace {
thread_local Carrier* t_carrier = nullptr;

#ifdef KCACHE_FIBER_ASAN
// libc's own swapcontext: ASan's interceptor of it prints a warning into
// the program's stderr at the first switch (breaking a tool's JSON log) and
// clears the target stack's shadow; the switches here tell ASan what they do
// instead (__sanitizer_start/finish_switch_fiber).
int SwapContext(ucontext_t* from, const ucontext_t* to) {
  using Fn = int (*)(ucontext_t*, const ucontext_t*);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "swapcontext"));
  return real(from, to);
}
#else
int SwapContext(ucontext_t* from, const ucontext_t* to) { return swapcontext(from, to); }
#endif

// Read through a call, never cached across a switch: a fiber may resume on
// another carrier.
[[gnu::noinline]] Carrier* CurrentCarrier() { return t_carrier; }
}  // namespace

class Fiber {
 public:
  enum class State { kQueued, kRunning, kSuspended };

  static Fiber* Create(std::function<void()> fn, std::shared_ptr<FiberHandle> handle);
  // On the carrier, once the fiber's function returned.
  static void Destroy(Fiber* f);

  // Makes a suspended fiber runnable; for a running one, its next suspension
  // ends at once.
  void Ready();

  // On the fiber: gives its carrier back until Ready().
  void SwitchOut();
  // On a carrier: runs the fiber until it suspends or ends.
  void SwitchIn(Carrier* c);

  static void Entry();

  std::function<void()> fn_;
  std::shared_ptr<FiberHandle> handle_;
  ucontext_t context_;
  char* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  bool finished_ = false;  // fiber side, read by the carrier after the switch

  std::mutex mu_;
  State state_ = State::kQueued;  // guarded by mu_
  bool wake_pending_ = false;     // guarded by mu_

#ifdef KCACHE_FIBER_ASAN
  void* fake_stack_ = nullptr;
#endif
#ifdef KCACHE_FIBER_TSAN
  void* tsan_ = nullptr;
#endif
};

namespace {

class Scheduler {
 public:
  static Scheduler& Get() {
    // Never destroyed: fibers may wait until the process exits.
    static Scheduler* const s = new Scheduler();
    return *s;
  }

  void Push(Fiber* f) {
    {
      std::lock_guard l(mu_);
      queue_.push_back(f);
    }
    cv_.notify_one();
  }

  size_t carriers() const { return carriers_; }

 private:
  Scheduler() {
    carriers_ = std::clamp<size_t>(std::thread::hardware_concurrency(), 2, 8);
    for (size_t i = 0; i < carriers_; ++i) {
      std::thread t([this] { Run(); });
      pthread_setname_np(t.native_handle(), "kcache-fiber");
      t.detach();
    }
  }

  void Run() {
    // Fibers write to sockets (a served connection, through OpenSSL, which
    // does not pass MSG_NOSIGNAL): a peer gone mid-write must fail the
    // write, not kill the process. SIGPIPE from a write goes to the
    // writing thread.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    Carrier c;
    t_carrier = &c;
#ifdef KCACHE_FIBER_TSAN
    c.tsan = __tsan_get_current_fiber();
#endif
    for (;;) {
      Fiber* f;
      {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return !queue_.empty(); });
        f = queue_.front();
        queue_.pop_front();
      }
      {
        std::lock_guard l(f->mu_);
        f->state_ = Fiber::State::kRunning;
        f->wake_pending_ = false;
      }
      f->SwitchIn(&c);
      if (f->finished_) {
        Fiber::Destroy(f);
        continue;
      }
      bool again = false;
      {
        std::lock_guard l(f->mu_);
        if (f->wake_pending_) {
          f->wake_pending_ = false;
          f->state_ = Fiber::State::kQueued;
          again = true;
        } else {
          f->state_ = Fiber::State::kSuspended;
        }
      }
      if (again) Push(f);
    }
  }

  size_t carriers_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Fiber*> queue_;  // guarded by mu_
};

}  // namespace

Fiber* Fiber::Create(std::function<void()> fn, std::shared_ptr<FiberHandle> handle) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* f = new Fiber();
  f->fn_ = std::move(fn);
  f->handle_ = std::move(handle);
  f->mapping_size_ = kStackBytes + page;
  void* m = mmap(nullptr, f->mapping_size_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "kcache: cannot map a fiber's stack of %zu bytes\n", f->mapping_size_);
    std::abort();
  }
  f->mapping_ = static_cast<char*>(m);
  mprotect(f->mapping_, page, PROT_NONE);  // a guard page below the stack
  getcontext(&f->context_);
  // swapcontext installs a context's signal mask: a fiber runs with SIGPIPE
  // blocked, as its carriers do (Scheduler::Run), whoever spawned it.
  sigaddset(&f->context_.uc_sigmask, SIGPIPE);
  f->context_.uc_stack.ss_sp = f->mapping_ + page;
  f->context_.uc_stack.ss_size = kStackBytes;
  f->context_.uc_link = nullptr;
  makecontext(&f->context_, &Fiber::Entry, 0);
#ifdef KCACHE_FIBER_TSAN
  f->tsan_ = __tsan_create_fiber(0);
#endif
  return f;
}

void Fiber::Destroy(Fiber* f) {
#ifdef KCACHE_FIBER_TSAN
  __tsan_destroy_fiber(f->tsan_);
#endif
#ifdef KCACHE_FIBER_ASAN
  ASAN_UNPOISON_MEMORY_REGION(f->mapping_, f->mapping_size_);
#endif
  munmap(f->mapping_, f->mapping_size_);
  std::shared_ptr<FiberHandle> handle = std::move(f->handle_);
  delete f;
  {
    std::lock_guard l(handle->mu_);
    handle->done_ = true;
  }
  handle->cv_.notify_all();
}

void Fiber::Ready() {
  bool push = false;
  {
    std::lock_guard l(mu_);
    if (state_ == State::kSuspended) {
      state_ = State::kQueued;
      push = true;
    } else if (state_ == State::kRunning) {
      wake_pending_ = true;
    }
  }
  if (push) Scheduler::Get().Push(this);
}

void Fiber::SwitchIn(Carrier* c) {
  c->current = this;
#ifdef KCACHE_FIBER_ASAN
  __sanitizer_start_switch_fiber(&c->fake_stack, context_.uc_stack.ss_sp,
                                 context_.uc_stack.ss_size);
#endif
#ifdef KCACHE_FIBER_TSAN
  __tsan_switch_to_fiber(tsan_, 0);
#endif
  SwapContext(&c->context, &context_);
#ifdef KCACHE_FIBER_ASAN
  __sanitizer_finish_switch_fiber(c->fake_stack, nullptr, nullptr);
#endif
  c->current = nullptr;
}

void Fiber::SwitchOut() {
  Carrier* c = CurrentCarrier();
#ifdef KCACHE_FIBER_ASAN
  // A finished fiber's fake stack is released with it.
  __sanitizer_start_switch_fiber(finished_ ? nullptr : &fake_stack_, c->stack_bottom,
                                 c->stack_size);
#endif
#ifdef KCACHE_FIBER_TSAN
  __tsan_switch_to_fiber(c->tsan, 0);
#endif
  SwapContext(&context_, &c->context);
#ifdef KCACHE_FIBER_ASAN
  Carrier* now = CurrentCarrier();
  __sanitizer_finish_switch_fiber(fake_stack_, &now->stack_bottom, &now->stack_size);
#endif
}

void Fiber::Entry() {
  Fiber* f = CurrentCarrier()->current;
#ifdef KCACHE_FIBER_ASAN
  Carrier* c = CurrentCarrier();
  __sanitizer_finish_switch_fiber(nullptr, &c->stack_bottom, &c->stack_size);
#endif
  {
    std::function<void()> fn = std::move(f->fn_);
    f->fn_ = nullptr;
    fn();
  }  // what fn captured is destroyed on the fiber
  f->finished_ = true;
  f->SwitchOut();  // does not return
  std::abort();
}

namespace {
Fiber* CurrentFiber() {
  Carrier* c = CurrentCarrier();
  return c ? c->current : nullptr;
}
}  // namespace

struct CondVar::Waiter {
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false;      // guarded by mu
  Fiber* fiber = nullptr;  // null for a thread

  // Ready() runs under `mu`: the fiber cannot see `woken`, end its wait and
  // end (freeing itself) while this still uses it.
  void Wake() {
    std::lock_guard l(mu);
    if (woken) return;
    woken = true;
    if (fiber) {
      fiber->Ready();
    } else {
      cv.notify_one();
    }
  }
  bool Woken() {
    std::lock_guard l(mu);
    return woken;
  }
};

void CondVar::notify_all() {
  std::vector<std::shared_ptr<Waiter>> waiters;
  {
    std::lock_guard l(mu_);
    waiters.swap(waiters_);
  }
  for (auto& w : waiters) w->Wake();
}

bool CondVar::WaitUntil(std::unique_lock<std::mutex>& lock, const TimePoint* deadline,
                        const std::stop_token* stop) {
  auto w = std::make_shared<Waiter>();
  Fiber* f = CurrentFiber();
  w->fiber = f;
  {
    std::lock_guard l(mu_);
    waiters_.push_back(w);
  }
  lock.unlock();
  {
    // Runs at once, here, when stop was requested already.
    std::optional<std::stop_callback<std::function<void()>>> on_stop;
    if (stop) on_stop.emplace(*stop, std::function<void()>([w] { w->Wake(); }));
    if (!f) {
      std::unique_lock wl(w->mu);
      if (deadline) {
        w->cv.wait_until(wl, *deadline, [&] { return w->woken; });
      } else {
        w->cv.wait(wl, [&] { return w->woken; });
      }
      w->woken = true;  // a later Wake does nothing
    } else {
      std::shared_ptr<TimerCall> timer;
      if (deadline) {
        timer = std::make_shared<TimerCall>([w] { w->Wake(); });
        FireAt(*deadline, timer);
      }
      // A Wake between the unlock above and the switch makes the switch
      // come straight back (Ready on a running fiber); a resume with no Wake
      // waits again.
      while (!w->Woken()) f->SwitchOut();
      if (timer) timer->Cancel();
    }
  }
  {
    std::lock_guard l(mu_);
    auto it = std::find(waiters_.begin(), waiters_.end(), w);
    if (it != waiters_.end()) waiters_.erase(it);
  }
  lock.lock();
  return !deadline || std::chrono::steady_clock::now() < *deadline;
}

bool SleepUntil(std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  std::mutex mu;
  CondVar cv;
  std::unique_lock l(mu);
  // Nothing notifies cv: only the deadline or `stop` ends the wait.
  cv.wait_until(l, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

void FiberHandle::Join() {
  std::unique_lock l(mu_);
  cv_.wait(l, [&] { return done_; });
}

bool FiberHandle::Done() const {
  std::lock_guard l(mu_);
  return done_;
}

std::shared_ptr<FiberHandle> Spawn(std::function<void()> fn) {
  auto handle = std::make_shared<FiberHandle>();
  Scheduler::Get().Push(Fiber::Create(std::move(fn), handle));
  return handle;
}

bool InFiber() { return CurrentFiber() != nullptr; }

size_t Carriers() { return Scheduler::Get().carriers(); }

}  // namespace kcache::exec
