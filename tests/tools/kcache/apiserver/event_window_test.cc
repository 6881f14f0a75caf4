// SPDX-License-Identifier: Apache-2.0

// The shared window of recent changes that a served cache's watches read:
// each change is read from the source once however many watches follow it,
// and the window's memory stays within its bounds.

#include "tools/kcache/apiserver/event_window.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache::serve {
namespace {

using kcache::testing::Pod;

// A source of `count` changes at resourceVersions 1..count, each 1 KiB of
// JSON or so, that counts its reads.
class FakeSource {
 public:
  explicit FakeSource(uint64_t count) {
    for (uint64_t rv = 1; rv <= count; ++rv) Append();
  }
  void Append() {
    const uint64_t rv = events_.size() + 1;
    SourceEvent e;
    e.type = EventType::kModified;
    e.rv = rv;
    e.object = Pod("p" + std::to_string(rv), "ns", std::to_string(rv), {},
                   {{"pad", std::string(1000, 'x')}});
    events_.push_back(std::move(e));
  }
  EventWindow::Fill fill() {
    return [this](uint64_t after, size_t max) -> StatusOr<ChangeBatch> {
      ++reads;
      if (fail) return Status::Expired("41");
      ChangeBatch batch;
      for (size_t i = after; i < events_.size() && batch.events.size() < max; ++i) {
        batch.events.push_back(events_[i]);
      }
      batch.position = batch.events.empty() ? events_.size() : batch.events.back().rv;
      if (batch.events.size() < max) batch.position = events_.size();
      return batch;
    };
  }
  std::atomic<int> reads{0};
  bool fail = false;

 private:
  std::vector<SourceEvent> events_;
};

// Follows the window from `after` to `end`, returning the versions read.
std::vector<uint64_t> Follow(EventWindow& window, FakeSource& source, uint64_t after, uint64_t end,
                             size_t max) {
  std::vector<uint64_t> seen;
  while (after < end) {
    StatusOr<std::optional<ChangeBatch>> read = window.Read(after, max, 1, source.fill());
    EXPECT_OK(read);
    if (!read.ok() || !*read) break;
    for (const SourceEvent& e : (*read)->events) seen.push_back(e.rv);
    EXPECT_GT((*read)->position, after);
    if ((*read)->position <= after) break;
    after = (*read)->position;
  }
  return seen;
}

TEST(EventWindowTest, ManyWatchesFollowingOneStreamReadEachChangeOnce) {
  FakeSource source(2000);
  EventWindow window;
  ASSERT_OK(window.Read(0, 100, 1, source.fill()));  // opens the window at 0
  std::vector<std::vector<uint64_t>> seen(16);
  std::vector<std::thread> threads;
  for (auto& s : seen) {
    threads.emplace_back([&] { s = Follow(window, source, 0, 2000, 100); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& s : seen) {
    ASSERT_EQ(s.size(), 2000u);
    for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s[i], i + 1);
  }
  // 20 reads of 100 cover the 2,000 changes, for 16 watches as for one.
  EXPECT_EQ(source.reads.load(), 20);
}

TEST(EventWindowTest, WatchesShareOneCopyOfEachObject) {
  FakeSource source(10);
  EventWindow window;
  auto a = window.Read(0, 100, 1, source.fill());
  auto b = window.Read(0, 100, 1, source.fill());
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_TRUE(*a && *b);
  ASSERT_EQ((*a)->events.size(), 10u);
  ASSERT_EQ((*b)->events.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ((*a)->events[i].object, (*b)->events[i].object);
  EXPECT_EQ((*a)->position, 10u);
  EXPECT_EQ(source.reads.load(), 1);
}

TEST(EventWindowTest, AtTheHeadTheSourceIsReadOncePerGeneration) {
  FakeSource source(5);
  EventWindow window;
  ASSERT_OK(window.Read(0, 100, 1, source.fill()));
  for (int i = 0; i < 10; ++i) {
    auto read = window.Read(5, 100, 1, source.fill());
    ASSERT_OK(read);
    ASSERT_TRUE(*read);
    EXPECT_TRUE((*read)->events.empty());
    EXPECT_EQ((*read)->position, 5u);
  }
  EXPECT_EQ(source.reads.load(), 1);
  source.Append();
  auto next = window.Read(5, 100, 2, source.fill());  // a new generation
  ASSERT_OK(next);
  ASSERT_TRUE(*next);
  ASSERT_EQ((*next)->events.size(), 1u);
  EXPECT_EQ((*next)->events[0].rv, 6u);
  EXPECT_EQ(source.reads.load(), 2);
}

TEST(EventWindowTest, BeyondItsBoundsTheOldestGoAndAWatchBehindReadsTheSource) {
  FakeSource source(100);
  EventWindow window({.max_events = 30, .max_bytes = size_t{1} << 20});
  EXPECT_EQ(Follow(window, source, 0, 100, 10).size(), 100u);
  EventWindow::Extent extent = window.extent();
  EXPECT_EQ(extent.events, 30u);
  EXPECT_EQ(extent.start, 70u);
  EXPECT_EQ(extent.end, 100u);
  auto behind = window.Read(69, 10, 1, source.fill());
  ASSERT_OK(behind);
  EXPECT_FALSE(*behind);  // the caller reads the source itself
  auto inside = window.Read(70, 10, 1, source.fill());
  ASSERT_OK(inside);
  ASSERT_TRUE(*inside);
  EXPECT_EQ((*inside)->events.front().rv, 71u);
  EXPECT_EQ((*inside)->position, 80u);

  EventWindow small({.max_events = 1000, .max_bytes = 20 << 10});
  EXPECT_EQ(Follow(small, source, 0, 100, 10).size(), 100u);
  EXPECT_LE(small.extent().bytes, size_t{20} << 10);
  EXPECT_GT(small.extent().events, 0u);
}

TEST(EventWindowTest, APositionPastTheEndStartsTheWindowThere) {
  FakeSource source(50);
  EventWindow window;
  EXPECT_EQ(Follow(window, source, 0, 20, 10).size(), 20u);
  auto ahead = window.Read(40, 100, 1, source.fill());
  ASSERT_OK(ahead);
  ASSERT_TRUE(*ahead);
  ASSERT_EQ((*ahead)->events.size(), 10u);
  EXPECT_EQ((*ahead)->events.front().rv, 41u);
  EXPECT_EQ(window.extent().start, 40u);
  auto old = window.Read(20, 100, 1, source.fill());
  ASSERT_OK(old);
  EXPECT_FALSE(*old);
}

TEST(EventWindowTest, ASourceErrorIsReturnedAndEmptiesTheWindow) {
  FakeSource source(10);
  EventWindow window;
  ASSERT_OK(window.Read(0, 100, 1, source.fill()));
  source.fail = true;
  auto failed = window.Read(10, 100, 2, source.fill());
  EXPECT_EQ(failed.status().code(), StatusCode::kExpired);
  EXPECT_EQ(window.extent().events, 0u);
  source.fail = false;
  auto again = window.Read(3, 100, 3, source.fill());  // starts anew at 3
  ASSERT_OK(again);
  ASSERT_TRUE(*again);
  EXPECT_EQ((*again)->events.size(), 7u);
}

}  // namespace
}  // namespace kcache::serve
