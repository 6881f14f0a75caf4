// SPDX-License-Identifier: Apache-2.0

#include "informer/read_ahead.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "testing/fake_lister_watcher.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache::informer {
namespace {

using testing::FakeWatchStream;

WatchEvent Added(int i) {
  return {WatchEventType::kAdded, testing::Pod("p" + std::to_string(i), "ns", std::to_string(i))};
}

// Design invariant 2 (in order): decoding ahead keeps the watch's order.
TEST(ReadAheadStreamTest, EventsComeInOrderAndTheEndAfterThem) {
  auto inner = std::make_shared<FakeWatchStream>();
  ReadAheadStream s(std::make_unique<testing::ForwardingWatchStream>(inner), 1 << 20);
  for (int i = 0; i < 100; ++i) inner->Push(Added(i));
  inner->End();
  for (int i = 0; i < 100; ++i) {
    auto ev = s.Next();
    ASSERT_OK(ev) << ev.status();
    ASSERT_TRUE(*ev);
    EXPECT_EQ((*ev)->object->name(), "p" + std::to_string(i));
  }
  for (int again = 0; again < 2; ++again) {  // the end stays the end
    auto end = s.Next();
    ASSERT_OK(end) << end.status();
    EXPECT_FALSE(*end);
  }
}

TEST(ReadAheadStreamTest, AnErrorComesAfterTheEventsBeforeIt) {
  auto inner = std::make_shared<FakeWatchStream>();
  ReadAheadStream s(std::make_unique<testing::ForwardingWatchStream>(inner), 1 << 20);
  inner->Push(Added(1));
  inner->Fail(Status::Expired("too old resource version"));
  inner->Push(Added(2));  // never read: the stream ended at the error
  auto first = s.Next();
  ASSERT_OK(first) << first.status();
  EXPECT_EQ((**first).object->name(), "p1");
  EXPECT_TRUE(s.Next().status().IsExpired());
  EXPECT_TRUE(s.Next().status().IsExpired());
  EXPECT_TRUE(inner->Ready());  // p2 is still in the inner stream
}

// Reading pauses at the bound: with room for about two objects, most of ten
// stay in the inner stream until the consumer takes what was read.
TEST(ReadAheadStreamTest, ReadingPausesAtTheBound) {
  auto inner = std::make_shared<FakeWatchStream>();
  const size_t one = Added(0).object->byte_size();
  ReadAheadStream s(std::make_unique<testing::ForwardingWatchStream>(inner), 2 * one);
  for (int i = 0; i < 10; ++i) inner->Push(Added(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(inner->Ready()) << "the read-ahead took every event";
  EXPECT_TRUE(s.Ready());
  for (int i = 0; i < 10; ++i) {
    auto ev = s.Next();
    ASSERT_OK(ev) << ev.status();
    EXPECT_EQ((**ev).object->name(), "p" + std::to_string(i));
  }
  EXPECT_FALSE(inner->Ready());
}

TEST(ReadAheadStreamTest, CancelEndsAWaitingNextAndTheReader) {
  auto inner = std::make_shared<FakeWatchStream>();
  auto s = std::make_unique<ReadAheadStream>(
      std::make_unique<testing::ForwardingWatchStream>(inner), 1 << 20);
  auto waiting = std::async(std::launch::async, [&] { return s->Next().status(); });
  ASSERT_EQ(waiting.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  s->Cancel();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(waiting.get().code(), StatusCode::kCancelled);
  s.reset();  // joins the reader, which the inner stream's cancel released
}

}  // namespace
}  // namespace kcache::informer
