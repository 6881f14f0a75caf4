// SPDX-License-Identifier: Apache-2.0

// Running a server of `kcache serve` in the foreground: the line that says
// where it serves, and the signals that stop it.

#ifndef KCACHE_TOOLS_KCACHE_APISERVER_FOREGROUND_H_
#define KCACHE_TOOLS_KCACHE_APISERVER_FOREGROUND_H_

#include <signal.h>

#include <string>

namespace kcache::serve {

// "serving on URL  (try: ...)\n", with a command that reads from URL.
std::string ServingLine(const std::string& url);

// SIGINT and SIGTERM, blocked in the constructing thread and in the threads
// it starts afterwards, so that only Wait() receives them. Construct before
// any thread starts.
//
// Thread-safety: one thread calls Wait.
class StopSignals {
 public:
  StopSignals();
  // Blocks until one arrives; returns its name, "SIGINT" or "SIGTERM".
  const char* Wait();

 private:
  sigset_t set_;
};

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_APISERVER_FOREGROUND_H_
