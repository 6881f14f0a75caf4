// Runs a shell command and collects what it prints.
#ifndef KCACHE_TESTS_TESTING_COMMAND_H_
#define KCACHE_TESTS_TESTING_COMMAND_H_

#include <string>

namespace kcache::testing {

struct CommandResult {
  int exit_code;       // -1 if it did not exit normally
  std::string output;  // stdout (add 2>&1 to the command for stderr)
};

// Runs `command` with /bin/sh and waits for it.
CommandResult RunCommand(const std::string& command);

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_COMMAND_H_
