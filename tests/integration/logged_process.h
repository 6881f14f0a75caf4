// SPDX-License-Identifier: Apache-2.0

// A child process of an integration test (a controller), its stdout and
// stderr in a log file the test reads as it runs. Killed with SIGKILL when
// destroyed, unless stopped before.
#ifndef KCACHE_TESTS_INTEGRATION_LOGGED_PROCESS_H_
#define KCACHE_TESTS_INTEGRATION_LOGGED_PROCESS_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kcache::testing {

class LoggedProcess {
 public:
  // Starts `argv` (argv[0] is the binary's path; empty: a failure is
  // recorded and nothing starts).
  LoggedProcess(const std::vector<std::string>& argv, std::string log) : log_(std::move(log)) {
    if (argv.empty() || argv[0].empty()) {
      ADD_FAILURE() << "no binary to start";
      return;
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~LoggedProcess() {
    if (pid_ > 0) Stop(SIGKILL);
  }
  LoggedProcess(const LoggedProcess&) = delete;
  LoggedProcess& operator=(const LoggedProcess&) = delete;

  std::string Log() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // How often `what` occurs in the log.
  int Count(const std::string& what) const {
    const std::string log = Log();
    int n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  }
  // Sends `sig` and returns the wait status.
  int Stop(int sig) {
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

// The path in environment variable `name`; "" (and a recorded failure) if
// it is not set.
inline std::string BinaryFromEnv(const char* name) {
  const char* bin = std::getenv(name);
  if (bin == nullptr) ADD_FAILURE() << name << " is not set";
  return bin ? bin : "";
}

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_INTEGRATION_LOGGED_PROCESS_H_
