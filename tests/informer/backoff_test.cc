// SPDX-License-Identifier: Apache-2.0

// cache/backoff.h with an injected clock: client-go's backoff managers.

#include "informer/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "testing/fake_clock.h"

namespace kcache {
namespace {

using std::chrono::milliseconds;

// client-go: 800 ms doubling to 30 s, jitter 1.0, reset after 2 min.
TEST(BackoffTest, DoublesWithJitterUpToTheCapAndResets) {
  auto clock = std::make_shared<testing::FakeClock>();
  informer::Backoff b(clock, {}, 42);
  milliseconds base(800);
  for (int i = 0; i < 8; ++i) {
    auto d = b.Next();
    EXPECT_GE(d, base) << i;
    EXPECT_LT(d, 2 * base) << i;
    base = std::min(base * 2, milliseconds(30000));
    clock->Advance(std::chrono::seconds(1));
  }
  EXPECT_EQ(base, milliseconds(30000));
  // Healthy for more than 2 minutes: back to the first step.
  clock->Advance(std::chrono::minutes(3));
  auto d = b.Next();
  EXPECT_GE(d, milliseconds(800));
  EXPECT_LT(d, milliseconds(1600));
}

// wait.Backoff's steps: the delay grows for `steps` delays, then stays.
TEST(BackoffTest, StopsGrowingAfterItsSteps) {
  auto clock = std::make_shared<testing::FakeClock>();
  informer::BackoffOptions o;
  o.initial = milliseconds(100);
  o.cap = milliseconds(100000);
  o.factor = 3.0;
  o.jitter = 0;
  o.steps = 2;
  informer::Backoff b(clock, o, 1);
  std::vector<milliseconds> got;
  for (int i = 0; i < 4; ++i) {
    got.push_back(std::chrono::duration_cast<milliseconds>(b.Next()));
    clock->Advance(std::chrono::seconds(1));
  }
  EXPECT_EQ(got, (std::vector<milliseconds>{milliseconds(100), milliseconds(300), milliseconds(900),
                                            milliseconds(900)}));
}

}  // namespace
}  // namespace kcache
