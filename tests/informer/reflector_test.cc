// Reflector pieces with an injected clock: backoff, resourceVersion order.
#include "kcache/reflector.h"

#include <gtest/gtest.h>

#include "informer/backoff.h"
#include "informer/resource_version.h"
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

// Invariant 5: resourceVersions are compared as integers only where both are
// decimal; otherwise there is no answer and callers fall back.
TEST(ResourceVersionTest, ComparesDecimalsOfAnyLength) {
  EXPECT_EQ(CompareResourceVersions("10", "9"), 1);
  EXPECT_EQ(CompareResourceVersions("9", "10"), -1);
  EXPECT_EQ(CompareResourceVersions("123", "123"), 0);
  EXPECT_EQ(CompareResourceVersions("0010", "10"), 0);
  EXPECT_EQ(CompareResourceVersions("99999999999999999999999", "100000000000000000000000"), -1);
  EXPECT_EQ(CompareResourceVersions("abc", "10"), std::nullopt);
  EXPECT_EQ(CompareResourceVersions("", "10"), std::nullopt);
  EXPECT_EQ(CompareResourceVersions("-1", "10"), std::nullopt);
}

TEST(FakeClockTest, SleepWakesOnAdvanceOrStop) {
  testing::FakeClock clock;
  std::stop_source stop;
  std::thread t([&] { EXPECT_TRUE(clock.SleepFor(std::chrono::seconds(5), stop.get_token())); });
  clock.WaitForSleepers(1);
  clock.Advance(std::chrono::seconds(5));
  t.join();
  std::thread u([&] { EXPECT_FALSE(clock.SleepFor(std::chrono::seconds(5), stop.get_token())); });
  clock.WaitForSleepers(1);
  stop.request_stop();
  u.join();
}

}  // namespace
}  // namespace kcache
