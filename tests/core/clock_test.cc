// SPDX-License-Identifier: Apache-2.0

// The real clock's sleeps: the deadline or a stop ends them, and the result
// says which.
#include "kcache/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace kcache {
namespace {

TEST(RealClockTest, SleepSaysWhetherItWasStopped) {
  std::shared_ptr<Clock> clock = Clock::Real();
  std::stop_source running;
  EXPECT_TRUE(clock->SleepFor(std::chrono::milliseconds(5), running.get_token()));

  std::stop_source stop;
  std::thread t([&] { stop.request_stop(); });
  bool slept = clock->SleepFor(std::chrono::hours(1), stop.get_token());
  t.join();
  EXPECT_FALSE(slept);
  // Already stopped: returns at once, false.
  EXPECT_FALSE(clock->SleepFor(std::chrono::hours(1), stop.get_token()));
}

}  // namespace
}  // namespace kcache
