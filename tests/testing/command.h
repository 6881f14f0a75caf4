// SPDX-License-Identifier: Apache-2.0

// Runs a shell command and collects what it prints.
#ifndef KCACHE_TESTS_TESTING_COMMAND_H_
#define KCACHE_TESTS_TESTING_COMMAND_H_

#include <string>
#include <utility>

namespace kcache::testing {

struct CommandResult {
  int exit_code;       // -1 if it did not exit normally
  std::string output;  // stdout (add 2>&1 to the command for stderr)
};

// Runs `command` with /bin/sh and waits for it.
CommandResult RunCommand(const std::string& command);

// A command running in the background, its stdout and stderr on a pipe.
struct Background {
  int pid = -1;  // the command's own (exec'd by the shell)
  int out = -1;  // the pipe's read end
};
// Starts `command` with /bin/sh. pid is -1 if it could not be started.
Background StartCommand(const std::string& command);
// Reads from `fd` until `lines` newlines have arrived or it closes.
std::string ReadLines(int fd, int lines);
// Reads `fd` to its end and closes it.
std::string Drain(int fd);
// Sends `sig`, waits for the command and empties its pipe; returns its exit
// code (-1 if a signal ended it or it was not running).
int Stop(Background& b, int sig);

// The kcache binary of the build, from $KCACHE_BIN (which meson sets for
// the tests that run it); unset, a test failure and "false".
std::string KcacheBin();

// Writes a self-signed certificate for 127.0.0.1 (`cert`) and its private
// key (`key`), PEM, for a server under test to serve TLS with; the openssl
// command's result.
CommandResult MakeServingCertificate(const std::string& cert, const std::string& key);

// `kcache serve ARGS` in the background, after the lines it prints up to
// the one that says where it listens. Stopped (SIGTERM) when destroyed, unless stopped before.
struct ServeProcess {
  Background process;
  std::string banner;  // those lines
  std::string url;     // http://HOST:PORT from the banner; empty if none
  // HOST:PORT, for a server started again on the same address.
  std::string listen() const;

  ServeProcess() = default;
  ServeProcess(Background p, std::string b, std::string u)
      : process(p), banner(std::move(b)), url(std::move(u)) {}
  ServeProcess(ServeProcess&& other) noexcept { *this = std::move(other); }
  ServeProcess& operator=(ServeProcess&& other) noexcept;
  ~ServeProcess();
};
// Records a test failure if it does not start or names no URL.
ServeProcess StartServe(const std::string& args);

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_COMMAND_H_
