// SPDX-License-Identifier: Apache-2.0

// The helpers of a controller's main(): SetupSignalHandler (the first
// SIGINT or SIGTERM asks to stop, a second ends the process) and the
// status macros that end the process on error.

#include "kcache/signals.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "kcache/exit_on_error.h"

namespace kcache {
namespace {

// Reads one byte from `fd`, waiting at most 10 s; 0 if none came.
char ReadByte(int fd) {
  for (int i = 0; i < 1000; ++i) {
    char c = 0;
    if (read(fd, &c, 1) == 1) return c;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

TEST(SignalsTest, TheFirstSignalAsksToStopAndASecondEndsTheProcess) {
  for (int first : {SIGTERM, SIGINT}) {
    int pipe_fds[2];
    ASSERT_EQ(pipe2(pipe_fds, O_NONBLOCK), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::stop_token stop = SetupSignalHandler();
      // Every call shares the one stop source.
      if (SetupSignalHandler().stop_requested() != stop.stop_requested()) _exit(3);
      (void)!write(pipe_fds[1], "r", 1);
      for (int i = 0; i < 1000 && !stop.stop_requested(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!stop.stop_requested()) _exit(2);
      // It says which signal asked: 's' for SIGTERM, 'i' for SIGINT.
      (void)!write(pipe_fds[1],
                   StopSignal() == SIGTERM  ? "s"
                   : StopSignal() == SIGINT ? "i"
                                            : "?",
                   1);
      // A shutdown that hangs: only the second signal ends it.
      for (;;) pause();
    }
    EXPECT_EQ(ReadByte(pipe_fds[0]), 'r');
    ASSERT_EQ(kill(pid, first), 0);
    EXPECT_EQ(ReadByte(pipe_fds[0]), first == SIGTERM ? 's' : 'i')
        << "the first signal did not ask to stop, or StopSignal() did not name it";
    ASSERT_EQ(kill(pid, first == SIGTERM ? SIGINT : SIGTERM), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 1);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
  }
}

StatusOr<int> Answer(bool ok) {
  if (!ok) return Status::NotFound("no answer");
  return 42;
}

TEST(ExitOnErrorTest, MainEndsWithTheStatusPrinted) {
  KCACHE_ASSIGN_OR_EXIT(int answer, Answer(true));
  EXPECT_EQ(answer, 42);
  KCACHE_EXIT_IF_ERROR(Status::OK());
  EXPECT_EXIT({ KCACHE_EXIT_IF_ERROR(Status::Unavailable("server gone")); },
              ::testing::ExitedWithCode(1), "error: Unavailable: server gone");
  EXPECT_EXIT(
      {
        KCACHE_ASSIGN_OR_EXIT(int never, Answer(false));
        (void)never;
      },
      ::testing::ExitedWithCode(1), "error: NotFound: no answer");
}

}  // namespace
}  // namespace kcache
