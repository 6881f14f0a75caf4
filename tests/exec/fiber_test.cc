// SPDX-License-Identifier: Apache-2.0

// Fibers (invariant 7, width costs memory, not threads): a thousand waits
// hold a few carrier threads, waits on one another never deadlock however
// few carriers there are, and timed and stoppable waits end as std's do.
#include "exec/fiber.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "testing/eventually.h"

namespace kcache {
namespace {

using std::chrono::milliseconds;
using testing::Eventually;

TEST(FiberTest, AThousandWaitingFibersShareTheCarriers) {
  std::mutex mu;
  exec::CondVar cv;
  bool go = false;
  std::set<std::thread::id> carriers;
  std::atomic<int> waiting{0}, done{0};
  std::vector<std::shared_ptr<exec::FiberHandle>> fibers;
  for (int i = 0; i < 1000; ++i) {
    fibers.push_back(exec::Spawn([&] {
      EXPECT_TRUE(exec::InFiber());
      std::unique_lock l(mu);
      carriers.insert(std::this_thread::get_id());
      ++waiting;
      cv.wait(l, [&] { return go; });
      carriers.insert(std::this_thread::get_id());
      ++done;
    }));
  }
  ASSERT_TRUE(Eventually([&] { return waiting == 1000; })) << waiting << " of 1000 fibers waiting";
  EXPECT_EQ(done, 0);
  {
    std::lock_guard l(mu);
    go = true;
  }
  cv.notify_all();
  for (auto& f : fibers) f->Join();
  EXPECT_EQ(done, 1000);
  EXPECT_LE(carriers.size(), exec::Carriers());
  EXPECT_GE(exec::Carriers(), 2u);
  EXPECT_LE(exec::Carriers(), 8u);
  EXPECT_FALSE(exec::InFiber());
}

TEST(FiberTest, FibersWaitingOnEachOtherNeverDeadlock) {
  // 200 pairs pass a ball 50 times each: every fiber waits for another
  // fiber, far more than there are carriers.
  constexpr int kPairs = 200, kRounds = 50;
  struct Pair {
    std::mutex mu;
    exec::CondVar cv;
    int ball = 0;  // even: the first's turn
  };
  std::vector<Pair> pairs(kPairs);
  std::vector<std::shared_ptr<exec::FiberHandle>> fibers;
  for (Pair& p : pairs) {
    for (int side = 0; side < 2; ++side) {
      fibers.push_back(exec::Spawn([&p, side] {
        for (int r = 0; r < kRounds; ++r) {
          std::unique_lock l(p.mu);
          p.cv.wait(l, [&] { return p.ball % 2 == side; });
          ++p.ball;
          l.unlock();
          p.cv.notify_all();
        }
      }));
    }
  }
  for (auto& f : fibers) f->Join();
  for (Pair& p : pairs) EXPECT_EQ(p.ball, 2 * kRounds);
}

TEST(FiberTest, TimedWaitsEndAtTheirDeadline) {
  std::mutex mu;
  exec::CondVar cv;
  bool timed_out = false;
  std::chrono::steady_clock::duration waited{};
  exec::Spawn([&] {
    std::unique_lock l(mu);
    auto start = std::chrono::steady_clock::now();
    timed_out = !cv.wait_for(l, milliseconds(50), [] { return false; });
    waited = std::chrono::steady_clock::now() - start;
  })->Join();
  EXPECT_TRUE(timed_out);
  EXPECT_GE(waited, milliseconds(50));
}

TEST(FiberTest, AStopEndsASleepAndAWait) {
  std::stop_source stop;
  bool slept = true, woke = true;
  std::mutex mu;
  exec::CondVar cv;
  auto sleeper = exec::Spawn([&] {
    slept = exec::SleepUntil(std::chrono::steady_clock::now() + std::chrono::hours(1),
                             stop.get_token());
  });
  auto waiter = exec::Spawn([&] {
    std::unique_lock l(mu);
    woke = cv.wait(l, stop.get_token(), [] { return false; });
  });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(sleeper->Done());
  EXPECT_FALSE(waiter->Done());
  stop.request_stop();
  sleeper->Join();
  waiter->Join();
  EXPECT_FALSE(slept) << "a stopped sleep says so";
  EXPECT_FALSE(woke);
  // Stopped before it begins: returns at once.
  exec::Spawn([&] {
    EXPECT_FALSE(exec::SleepUntil(std::chrono::steady_clock::now() + std::chrono::hours(1),
                                  stop.get_token()));
  })->Join();
}

TEST(FiberTest, ThreadsAndFibersWaitOnOneCondVar) {
  std::mutex mu;
  exec::CondVar cv;
  int stage = 0;
  // A fiber waits for a thread, which waits for the fiber, and a fiber
  // joins another.
  auto fiber = exec::Spawn([&] {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return stage == 1; });
    stage = 2;
    l.unlock();
    cv.notify_all();
  });
  std::thread thread([&] {
    std::unique_lock l(mu);
    stage = 1;
    l.unlock();
    cv.notify_all();
    l.lock();
    cv.wait(l, [&] { return stage == 2; });
  });
  exec::Spawn([&] { fiber->Join(); })->Join();
  thread.join();
  EXPECT_EQ(stage, 2);
}

}  // namespace
}  // namespace kcache
