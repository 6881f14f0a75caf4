// SPDX-License-Identifier: Apache-2.0

#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace kcache {

StatusOr<std::string> RunCapture(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env, std::string_view what,
                                 std::chrono::milliseconds timeout) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0)
    return Status::IOError(std::string(what) + ": pipe: " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    return Status::NotFound(std::string(what) + ": cannot run: " + std::strerror(rc));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
        .count();
  };
  int wstatus = 0;
  auto timed_out = [&] {
    kill(pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", static_cast<double>(timeout.count()) / 1000);
    return Status::DeadlineExceeded(std::string(what) + ": still running after " + secs +
                                    " s; killed");
  };
  std::string out;
  char buf[8192];
  constexpr size_t kMaxOutput = 1 << 20;
  for (;;) {
    const int64_t left = left_ms();
    if (left <= 0) {
      close(pipefd[0]);
      return timed_out();
    }
    pollfd p{pipefd[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t n = read(pipefd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < kMaxOutput) out.append(buf, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  // Its stdout is closed; it may still be running.
  for (;;) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (left_ms() <= 0) return timed_out();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFSIGNALED(wstatus)) {
    return Status::Unavailable(std::string(what) + ": killed by signal " +
                               std::to_string(WTERMSIG(wstatus)));
  }
  if (WEXITSTATUS(wstatus) != 0) {
    return Status::Unavailable(std::string(what) + ": exit status " +
                               std::to_string(WEXITSTATUS(wstatus)));
  }
  if (out.size() >= kMaxOutput)
    return Status::InvalidArgument(std::string(what) + ": output exceeds 1 MiB");
  return out;
}

}  // namespace kcache
