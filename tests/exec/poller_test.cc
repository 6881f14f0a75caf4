// SPDX-License-Identifier: Apache-2.0

// Waits on file descriptors (invariant 7): fibers waiting on sockets hold
// the carriers only while they run, and every wait ends on readiness, its
// deadline or its stop, whether a fiber or a plain thread waits.
#include "exec/poller.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "exec/fiber.h"
#include "testing/eventually.h"

namespace kcache {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using testing::Eventually;

// A connected pair of non-blocking sockets.
std::array<int, 2> Pair() {
  std::array<int, 2> fds{};
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds.data()), 0);
  return fds;
}

// 500 fibers each wait on a socket of their own, more than the carriers by
// far; each wakes when, and only when, its peer writes.
TEST(PollerTest, FibersWaitingOnSocketsShareTheCarriers) {
  constexpr int kFibers = 500;
  std::vector<std::array<int, 2>> pairs;
  std::atomic<int> woken{0};
  std::vector<std::shared_ptr<exec::FiberHandle>> fibers;
  for (int i = 0; i < kFibers; ++i) {
    pairs.push_back(Pair());
    const int fd = pairs.back()[0];
    fibers.push_back(exec::Spawn([fd, &woken] {
      EXPECT_EQ(exec::WaitFd(fd, exec::FdWait::kReadable, Clock::now() + std::chrono::seconds(60)),
                exec::FdReady::kReady);
      char c = 0;
      EXPECT_EQ(read(fd, &c, 1), 1);
      ++woken;
    }));
  }
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(woken, 0);
  // Half are written to: those wake, the others go on waiting.
  for (int i = 0; i < kFibers; i += 2) ASSERT_EQ(write(pairs[i][1], "x", 1), 1);
  EXPECT_TRUE(Eventually([&] { return woken == kFibers / 2; }));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(woken, kFibers / 2);
  for (int i = 1; i < kFibers; i += 2) ASSERT_EQ(write(pairs[i][1], "x", 1), 1);
  for (auto& f : fibers) f->Join();
  EXPECT_EQ(woken, kFibers);
  EXPECT_LE(exec::Carriers(), 8u);
  for (auto& p : pairs) {
    close(p[0]);
    close(p[1]);
  }
}

TEST(PollerTest, AWaitEndsAtItsDeadlineOrItsStopOnAFiberOrAThread) {
  const std::array<int, 2> fds = Pair();
  const int a = fds[0], b = fds[1];
  for (bool fiber : {true, false}) {
    exec::FdReady timed{}, stopped{};
    std::stop_source stop;
    auto run = [&] {
      timed = exec::WaitFd(a, exec::FdWait::kReadable, Clock::now() + milliseconds(50));
      stopped =
          exec::WaitFd(a, exec::FdWait::kReadable, Clock::time_point::max(), stop.get_token());
    };
    std::shared_ptr<exec::FiberHandle> f;
    std::thread t;
    if (fiber) {
      f = exec::Spawn(run);
    } else {
      t = std::thread(run);
    }
    std::this_thread::sleep_for(milliseconds(200));
    stop.request_stop();
    if (f) f->Join();
    if (t.joinable()) t.join();
    EXPECT_EQ(timed, exec::FdReady::kDeadline) << (fiber ? "fiber" : "thread");
    EXPECT_EQ(stopped, exec::FdReady::kStopped) << (fiber ? "fiber" : "thread");
  }
  close(a);
  close(b);
}

// A socket whose buffers are full is not writable until its peer reads; a
// peer that hangs up makes a waiting read ready (the read then says so).
TEST(PollerTest, WritableOnceThePeerReadsAndReadyOnHangUp) {
  auto [a, b] = Pair();
  char buf[65536] = {};
  while (write(a, buf, sizeof buf) > 0) {
  }
  EXPECT_EQ(exec::WaitFd(a, exec::FdWait::kWritable, Clock::now() + milliseconds(50)),
            exec::FdReady::kDeadline);
  std::thread reader([b = b, &buf] {
    std::this_thread::sleep_for(milliseconds(50));
    while (read(b, buf, sizeof buf) > 0) {
    }
  });
  EXPECT_EQ(exec::WaitFd(a, exec::FdWait::kWritable, Clock::now() + std::chrono::seconds(10)),
            exec::FdReady::kReady);
  reader.join();
  close(b);
  auto handle = exec::Spawn([a = a] {
    EXPECT_EQ(exec::WaitFd(a, exec::FdWait::kReadable, Clock::now() + std::chrono::seconds(10)),
              exec::FdReady::kReady);
    char c;
    EXPECT_EQ(read(a, &c, 1), 0);  // the end of the stream
  });
  handle->Join();
  close(a);
}

}  // namespace
}  // namespace kcache
