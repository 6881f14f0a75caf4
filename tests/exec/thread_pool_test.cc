// SPDX-License-Identifier: Apache-2.0

// The fixed thread budget (invariant 7): tasks share a pool that grows only
// while tasks block it, and timers share one thread.
#include "exec/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "kcache/clock.h"
#include "testing/eventually.h"
#include "testing/fake_clock.h"

namespace kcache {
namespace {

using std::chrono::milliseconds;
using testing::Eventually;

TEST(ThreadPoolTest, RunsEveryTaskOnItsMinimumWhenNoneBlocks) {
  // Growth needs a task to wait 5 s: a loaded machine's pauses are shorter.
  exec::ThreadPool pool({.name = "test-pool",
                         .min_threads = 2,
                         .max_threads = 8,
                         .grow_after = std::chrono::seconds(5)});
  std::atomic<int> ran{0};
  for (int i = 0; i < 10000; ++i) pool.Post([&] { ++ran; });
  ASSERT_TRUE(Eventually([&] { return ran == 10000; }));
  EXPECT_EQ(pool.threads(), 2u) << "short tasks never make it grow";
}

// Blocked tasks cost a thread each only while they keep the others from
// running; the pool stops at its maximum, and extra threads end when idle.
TEST(ThreadPoolTest, GrowsWhileTasksBlockUpToItsMaximumAndShrinksWhenIdle) {
  exec::ThreadPool pool({.name = "test-pool",
                         .min_threads = 2,
                         .max_threads = 4,
                         .grow_after = milliseconds(20),
                         .idle_exit = milliseconds(200)});
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> blocked{0}, ran{0};
  for (int i = 0; i < 6; ++i) {
    pool.Post([&] {
      ++blocked;
      std::unique_lock l(mu);
      cv.wait(l, [&] { return release; });
    });
  }
  pool.Post([&] { ++ran; });
  ASSERT_TRUE(Eventually([&] { return blocked == 4; }));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(pool.threads(), 4u);
  EXPECT_EQ(blocked, 4) << "no more threads than the maximum";
  EXPECT_EQ(ran, 0);
  {
    std::lock_guard l(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(Eventually([&] { return blocked == 6 && ran == 1; }));
  ASSERT_TRUE(Eventually([&] { return pool.threads() == 2; }));
}

// The real clock's timers run on one thread however many are armed, in
// deadline order; a cancelled or dropped one does not run.
TEST(ClockTimerTest, RealTimersShareOneThreadAndCancel) {
  auto clock = Clock::Real();
  const auto start = clock->Now();
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  std::vector<std::shared_ptr<Clock::Timer>> timers;
  for (int i = 9; i >= 0; --i) {
    // 200 ms ahead: a loaded machine makes all ten before the first is due.
    timers.push_back(clock->At(start + milliseconds(10 * i + 200), [&, i] {
      std::lock_guard l(mu);
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    }));
  }
  timers[0]->Cancel();  // i = 9
  timers[1].reset();    // i = 8: dropped, so cancelled
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard l(mu);
    return order.size() == 8;
  }));
  std::this_thread::sleep_for(milliseconds(150));
  std::lock_guard l(mu);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (const auto& t : threads) EXPECT_EQ(t, threads[0]);
  EXPECT_NE(threads[0], std::this_thread::get_id());
}

// Cancel waits for a call in progress on another thread; from inside the
// call it returns at once.
TEST(ClockTimerTest, CancelWaitsForTheCallInProgress) {
  auto clock = Clock::Real();
  std::atomic<bool> inside{false}, done{false};
  std::shared_ptr<Clock::Timer> self;
  std::mutex mu;
  auto timer = clock->At(clock->Now(), [&] {
    inside = true;
    {
      std::lock_guard l(mu);
      if (self) self->Cancel();  // from inside: no wait
    }
    std::this_thread::sleep_for(milliseconds(100));
    done = true;
  });
  {
    std::lock_guard l(mu);
    self = timer;
  }
  ASSERT_TRUE(Eventually([&] { return inside.load(); }));
  timer->Cancel();
  EXPECT_TRUE(done) << "Cancel returned while the call ran";
}

TEST(ClockTimerTest, FakeTimersFireOnAdvanceAndCountAsSleepers) {
  auto clock = std::make_shared<testing::FakeClock>();
  int fired = 0;
  auto a = clock->At(clock->Now() + milliseconds(100), [&] { ++fired; });
  auto b = clock->At(clock->Now() + milliseconds(300), [&] { ++fired; });
  clock->WaitForSleepers(2);
  clock->Advance(milliseconds(150));
  EXPECT_EQ(fired, 1);
  b.reset();
  clock->Advance(milliseconds(500));
  EXPECT_EQ(fired, 1) << "a dropped timer is cancelled";
}

}  // namespace
}  // namespace kcache
