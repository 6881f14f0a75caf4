// SPDX-License-Identifier: Apache-2.0

#include "kcache/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "testing/eventually.h"
#include "testing/fake_clock.h"

namespace kcache {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::FakeClock;

std::shared_ptr<WorkQueue> NewQueue(std::shared_ptr<FakeClock> clock,
                                    std::shared_ptr<RateLimiter> limiter = nullptr) {
  return WorkQueue::Create({.name = "test", .rate_limiter = std::move(limiter), .clock = clock});
}

TEST(WorkQueueTest, ProducersAndConsumersProcessEveryKeyOnceAndNeverConcurrently) {
  auto q = WorkQueue::Create();
  constexpr int kProducers = 4, kConsumers = 4, kKeys = 200;
  std::mutex mu;
  std::set<std::string> in_flight;
  std::map<std::string, int> processed;
  std::atomic<bool> overlap{false};

  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      while (auto key = q->Get()) {
        {
          std::lock_guard l(mu);
          if (!in_flight.insert(*key).second) overlap = true;
          ++processed[*key];
        }
        std::this_thread::yield();
        {
          std::lock_guard l(mu);
          in_flight.erase(*key);
        }
        q->Done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < kKeys; ++i) q->Add("key-" + std::to_string(i));
    });
  }
  for (auto& t : producers) t.join();
  q->ShutDownWithDrain();
  for (auto& t : consumers) t.join();

  EXPECT_FALSE(overlap) << "a key was handed to two workers at once";
  ASSERT_EQ(processed.size(), size_t{kKeys});
  for (const auto& [key, n] : processed) {
    // Each key is processed at least once, and at most once per add.
    EXPECT_GE(n, 1) << key;
    EXPECT_LE(n, kProducers) << key;
  }
  EXPECT_EQ(q->Len(), 0u);
}

TEST(WorkQueueTest, AKeyAddedTwiceIsQueuedOnce) {
  auto q = WorkQueue::Create();
  q->Add("a");
  q->Add("b");
  q->Add("a");
  EXPECT_EQ(q->Len(), 2u);
  EXPECT_EQ(q->Get(), "a");
  EXPECT_EQ(q->Get(), "b");
  EXPECT_EQ(q->Metrics().adds, 2u);
}

TEST(WorkQueueTest, AKeyAddedWhileProcessingIsQueuedAgainAtDone) {
  auto q = WorkQueue::Create();
  q->Add("a");
  auto key = q->Get();
  ASSERT_EQ(key, "a");
  // Not handed out again while it is processed...
  q->Add("a");
  q->Add("a");
  EXPECT_EQ(q->Len(), 0u);
  EXPECT_EQ(q->Metrics().depth, 1u);
  // ...but once, after Done.
  q->Done("a");
  EXPECT_EQ(q->Len(), 1u);
  EXPECT_EQ(q->Get(), "a");
  q->Done("a");
  EXPECT_EQ(q->Len(), 0u);
}

TEST(WorkQueueTest, AKeyReAddedAfterGetIsProcessedAgain) {
  auto q = WorkQueue::Create();
  q->Add("a");
  auto key = q->Get();
  q->Add(*key);  // re-inserted by its own worker, as a retry
  q->Done(*key);
  EXPECT_EQ(q->Len(), 1u);
  EXPECT_EQ(q->Get(), "a");
}

TEST(WorkQueueTest, ShutDownHandsOutWhatIsQueuedThenNothing) {
  auto q = WorkQueue::Create();
  q->Add("a");
  q->Add("b");
  q->ShutDown();
  EXPECT_TRUE(q->ShuttingDown());
  q->Add("c");  // dropped
  EXPECT_EQ(q->Get(), "a");
  EXPECT_EQ(q->Get(), "b");
  EXPECT_EQ(q->Get(), std::nullopt);
}

TEST(WorkQueueTest, ShutDownWakesABlockedGet) {
  auto q = WorkQueue::Create();
  std::optional<std::string> got = "unset";
  std::thread worker([&] { got = q->Get(); });
  std::this_thread::sleep_for(10ms);
  q->ShutDown();
  worker.join();
  EXPECT_EQ(got, std::nullopt);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForKeysBeingProcessed) {
  auto q = WorkQueue::Create();
  q->Add("a");
  q->Add("b");
  auto a = q->Get();
  auto b = q->Get();
  std::atomic<bool> drained{false};
  std::thread shutter([&] {
    q->ShutDownWithDrain();
    drained = true;
  });
  ASSERT_TRUE(Eventually([&] { return q->ShuttingDown(); }));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(drained) << "returned with two keys still processing";
  q->Done(*a);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(drained) << "returned with one key still processing";
  q->Done(*b);
  shutter.join();
  EXPECT_TRUE(drained);
}

// As client-go's: the drain waits for the keys being processed, not for the
// queued ones; a key queued again at Done() is still handed out after.
TEST(WorkQueueTest, ShutDownWithDrainLeavesAKeyQueuedAgainToGet) {
  auto q = WorkQueue::Create();
  q->Add("a");
  auto a = q->Get();
  q->Add("a");  // dirty while processing
  std::thread shutter([&] { q->ShutDownWithDrain(); });
  ASSERT_TRUE(Eventually([&] { return q->ShuttingDown(); }));
  q->Done(*a);
  shutter.join();
  EXPECT_EQ(q->Get(), "a");
  q->Done("a");
  EXPECT_EQ(q->Get(), std::nullopt);
}

TEST(WorkQueueTest, ShutDownDoesNotWaitForKeysBeingProcessed) {
  auto q = WorkQueue::Create();
  q->Add("a");
  auto a = q->Get();
  q->ShutDown();  // returns although "a" is not Done
  EXPECT_TRUE(q->ShuttingDown());
  q->Done(*a);
}

TEST(WorkQueueTest, AddAfterQueuesOnceTheDelayHasPassed) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock);
  q->AddAfter("a", 50ms);
  clock->WaitForSleepers(1);
  EXPECT_EQ(q->Len(), 0u);
  EXPECT_EQ(q->Metrics().waiting, 1u);
  clock->Advance(49ms);
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(q->Len(), 0u);
  clock->Advance(1ms);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 1; }));
  EXPECT_EQ(q->Get(), "a");
  EXPECT_EQ(q->Metrics().waiting, 0u);
}

TEST(WorkQueueTest, AddAfterWithoutDelayQueuesAtOnce) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock);
  q->AddAfter("a", 0ms);
  q->AddAfter("b", -1ms);
  EXPECT_EQ(q->Len(), 2u);
}

TEST(WorkQueueTest, AddAfterKeepsTheEarliestTimeOfAKey) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock);
  q->AddAfter("a", 50ms);
  q->AddAfter("a", 70ms);  // later: ignored
  EXPECT_EQ(q->Metrics().waiting, 1u);
  clock->Advance(60ms);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 1; }));
  EXPECT_EQ(q->Get(), "a");
  q->Done("a");

  q->AddAfter("b", 70ms);
  q->AddAfter("b", 50ms);  // earlier: wins
  clock->Advance(60ms);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 1; }));
  EXPECT_EQ(q->Get(), "b");
}

TEST(WorkQueueTest, AnEarlierDelayWakesTheDelayThread) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock);
  q->AddAfter("late", 1h);
  clock->WaitForSleepers(1);
  q->AddAfter("soon", 10ms);
  clock->Advance(10ms);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 1; }));
  EXPECT_EQ(q->Get(), "soon");
  EXPECT_EQ(q->Metrics().waiting, 1u);
}

TEST(WorkQueueTest, KeysComeOutInTheOrderOfTheirTimes) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock);
  q->AddAfter("c", 3s);
  q->AddAfter("a", 1s);
  q->AddAfter("b", 2s);
  q->AddAfter("d", 4s);
  clock->Advance(2s);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 2; }));
  EXPECT_EQ(q->Get(), "a");
  EXPECT_EQ(q->Get(), "b");
  clock->Advance(2s);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 2; }));
  EXPECT_EQ(q->Get(), "c");
  EXPECT_EQ(q->Get(), "d");
}

TEST(WorkQueueTest, ShutDownDropsDelayedKeys) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock);
  q->AddAfter("a", 1s);
  q->ShutDown();
  EXPECT_EQ(q->Metrics().waiting, 0u);
  clock->Advance(2s);
  EXPECT_EQ(q->Get(), std::nullopt);
  q->AddAfter("b", 1ms);  // dropped
  EXPECT_EQ(q->Metrics().waiting, 0u);
}

TEST(WorkQueueTest, AddRateLimitedWaitsAsTheLimiterSaysUntilForgotten) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock, RateLimiter::ItemExponential(1ms, 1s));
  q->AddRateLimited("one");
  q->AddRateLimited("one");  // still waiting: the earlier time (1 ms) stays
  EXPECT_EQ(q->Metrics().waiting, 1u);
  EXPECT_EQ(q->NumRequeues("one"), 2);
  q->AddRateLimited("two");
  EXPECT_EQ(q->Metrics().waiting, 2u);
  EXPECT_EQ(q->Metrics().retries, 3u);
  clock->Advance(1ms);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 2; }));

  q->Forget("one");
  EXPECT_EQ(q->NumRequeues("one"), 0);
  EXPECT_EQ(q->NumRequeues("two"), 1);
  // After Forget, the next retry starts again from the base delay.
  EXPECT_EQ(q->Get(), "one");
  q->AddRateLimited("one");
  q->Done("one");
  clock->Advance(1ms);
  ASSERT_TRUE(Eventually([&] { return q->Len() == 2; }));
}

TEST(WorkQueueTest, MetricsTimeTheQueueAndTheWork) {
  auto clock = std::make_shared<FakeClock>();
  auto q = NewQueue(clock);
  q->Add("a");
  q->Add("b");
  WorkQueueMetrics m = q->Metrics();
  EXPECT_EQ(m.name, "test");
  EXPECT_EQ(m.depth, 2u);
  EXPECT_EQ(m.adds, 2u);

  clock->Advance(50ms);
  auto a = q->Get();
  clock->Advance(2s);
  auto b = q->Get();
  clock->Advance(30ms);
  m = q->Metrics();
  EXPECT_EQ(m.depth, 0u);
  EXPECT_EQ(m.processing, 2u);
  EXPECT_EQ(m.queue_latency.count, 2u);
  EXPECT_NEAR(m.queue_latency.sum_seconds, 0.05 + 2.05, 1e-9);
  // "a" has run 2.03 s, "b" 0.03 s.
  EXPECT_NEAR(m.unfinished_work_seconds, 2.06, 1e-9);
  EXPECT_NEAR(m.longest_running_seconds, 2.03, 1e-9);

  q->Done(*a);
  q->Done(*b);
  m = q->Metrics();
  EXPECT_EQ(m.work_duration.count, 2u);
  EXPECT_NEAR(m.work_duration.sum_seconds, 2.06, 1e-9);
  EXPECT_EQ(m.unfinished_work_seconds, 0);
  EXPECT_EQ(m.processing, 0u);
  // 2.05 s of queue latency falls in the (1, 10] bucket.
  EXPECT_EQ(m.queue_latency.buckets[5], 1u);
}

TEST(WorkQueueTest, DoneOfAKeyNotHandedOutIsANoOp) {
  auto q = WorkQueue::Create();
  q->Done("never");
  q->Add("a");
  q->Done("a");  // queued, not processing
  EXPECT_EQ(q->Len(), 1u);
  EXPECT_EQ(q->Get(), "a");
}

// RunWorkers: every key reconciled, a failure reported and retried until
// it succeeds (then forgotten by the rate limiter), no key on two workers at
// once, and a return once the queue is shut down and drained.
TEST(WorkQueueTest, RunWorkersRetriesFailuresAndReturnsAfterShutDown) {
  auto q = WorkQueue::Create({.rate_limiter = RateLimiter::ItemExponential(1ms, 10ms)});
  std::mutex mu;
  std::map<std::string, int> calls;
  std::set<std::string> active;
  std::vector<std::string> errors;
  bool overlapped = false;
  for (int i = 0; i < 20; ++i) q->Add("k" + std::to_string(i));
  std::thread runner([&] {
    RunWorkers(
        *q, 3,
        [&](const std::string& key) {
          {
            std::lock_guard l(mu);
            overlapped |= !active.insert(key).second;
            ++calls[key];
          }
          std::this_thread::sleep_for(1ms);
          std::lock_guard l(mu);
          active.erase(key);
          // k7 fails twice before it succeeds.
          if (key == "k7" && calls[key] < 3) return Status::Unavailable("not yet");
          return Status::OK();
        },
        [&](const std::string& key, const Status& st) {
          std::lock_guard l(mu);
          errors.push_back(key + ": " + std::string(st.message()));
        });
  });
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard l(mu);
    return calls.size() == 20 && calls["k7"] == 3;
  }));
  q->ShutDownWithDrain();
  runner.join();  // returns: the workers have ended
  std::lock_guard l(mu);
  EXPECT_FALSE(overlapped);
  EXPECT_EQ(errors, (std::vector<std::string>{"k7: not yet", "k7: not yet"}));
  EXPECT_EQ(q->NumRequeues("k7"), 0) << "forgotten once it succeeded";
  for (const auto& [key, n] : calls) EXPECT_EQ(n, key == "k7" ? 3 : 1) << key;
}

}  // namespace
}  // namespace kcache
