// SPDX-License-Identifier: Apache-2.0

#include "kcache/rate_limiter.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace kcache {
namespace {

using namespace std::chrono_literals;
using Duration = Clock::Duration;

TEST(RateLimiterTest, ItemExponentialDoublesPerItemAndForgets) {
  auto r = RateLimiter::ItemExponential(1ms, 1s);
  EXPECT_EQ(r->When("one"), Duration(1ms));
  EXPECT_EQ(r->When("one"), Duration(2ms));
  EXPECT_EQ(r->When("one"), Duration(4ms));
  EXPECT_EQ(r->When("one"), Duration(8ms));
  EXPECT_EQ(r->When("one"), Duration(16ms));
  EXPECT_EQ(r->NumRequeues("one"), 5);
  // Items are counted apart.
  EXPECT_EQ(r->When("two"), Duration(1ms));
  EXPECT_EQ(r->When("two"), Duration(2ms));
  EXPECT_EQ(r->NumRequeues("two"), 2);

  r->Forget("one");
  EXPECT_EQ(r->NumRequeues("one"), 0);
  EXPECT_EQ(r->When("one"), Duration(1ms));
}

TEST(RateLimiterTest, ItemExponentialSaturatesAtMaxWithoutOverflow) {
  auto r = RateLimiter::ItemExponential(1ms, 1000s);
  for (int i = 0; i < 5; ++i) r->When("one");
  EXPECT_EQ(r->When("one"), Duration(32ms));
  // 2^exp grows past what a duration can hold; the wait stays at max.
  for (int i = 0; i < 1000; ++i) r->When("one");
  EXPECT_EQ(r->When("one"), Duration(1000s));
  EXPECT_EQ(r->NumRequeues("one"), 1007);
}

TEST(RateLimiterTest, ItemFastSlowTurnsSlowAfterTheFastAttempts) {
  auto r = RateLimiter::ItemFastSlow(5ms, 10s, 3);
  EXPECT_EQ(r->When("one"), Duration(5ms));
  EXPECT_EQ(r->When("one"), Duration(5ms));
  EXPECT_EQ(r->When("one"), Duration(5ms));
  EXPECT_EQ(r->When("one"), Duration(10s));
  EXPECT_EQ(r->When("one"), Duration(10s));
  EXPECT_EQ(r->NumRequeues("one"), 5);
  EXPECT_EQ(r->When("two"), Duration(5ms));
  r->Forget("one");
  EXPECT_EQ(r->When("one"), Duration(5ms));
}

TEST(RateLimiterTest, BucketSpendsTheBurstThenWaitsForTokens) {
  auto clock = std::make_shared<testing::FakeClock>();
  auto r = RateLimiter::Bucket(10, 3, clock);
  EXPECT_EQ(r->When("a"), Duration::zero());
  EXPECT_EQ(r->When("b"), Duration::zero());
  EXPECT_EQ(r->When("c"), Duration::zero());
  // One token per 100 ms, and each When() takes the next one.
  EXPECT_EQ(r->When("d"), Duration(100ms));
  EXPECT_EQ(r->When("e"), Duration(200ms));
  clock->Advance(1s);  // pays the debt of 2 and refills up to the burst
  EXPECT_EQ(r->When("f"), Duration::zero());
  EXPECT_EQ(r->When("g"), Duration::zero());
  EXPECT_EQ(r->When("h"), Duration::zero());
  EXPECT_EQ(r->When("i"), Duration(100ms));
  // The bucket counts no items.
  EXPECT_EQ(r->NumRequeues("a"), 0);
}

TEST(RateLimiterTest, MaxOfTakesTheLongestWaitAndForgetsInAll) {
  auto r = RateLimiter::MaxOf(
      {RateLimiter::ItemFastSlow(5ms, 3s, 3), RateLimiter::ItemExponential(1ms, 1s)});
  EXPECT_EQ(r->When("one"), Duration(5ms));
  EXPECT_EQ(r->When("one"), Duration(5ms));
  EXPECT_EQ(r->When("one"), Duration(5ms));
  EXPECT_EQ(r->When("one"), Duration(3s));
  EXPECT_EQ(r->When("one"), Duration(3s));
  EXPECT_EQ(r->NumRequeues("one"), 5);
  r->Forget("one");
  EXPECT_EQ(r->NumRequeues("one"), 0);
  EXPECT_EQ(r->When("one"), Duration(5ms));
}

TEST(RateLimiterTest, DefaultIsExponentialFrom5msUnderATenQpsBucket) {
  auto clock = std::make_shared<testing::FakeClock>();
  auto r = RateLimiter::Default(clock);
  EXPECT_EQ(r->When("one"), Duration(5ms));
  EXPECT_EQ(r->When("one"), Duration(10ms));
  // 100 more items spend the burst of 100; the next waits for the bucket.
  for (int i = 0; i < 98; ++i) r->When("k" + std::to_string(i));
  EXPECT_EQ(r->When("x"), Duration(100ms));
}

}  // namespace
}  // namespace kcache
