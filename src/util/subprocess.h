// SPDX-License-Identifier: Apache-2.0

// Runs a helper program (a kubeconfig exec plugin, a key plugin) and
// collects what it prints.
#ifndef KCACHE_SRC_UTIL_SUBPROCESS_H_
#define KCACHE_SRC_UTIL_SUBPROCESS_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/status_or.h"

namespace kcache {

// Runs `argv` with `env`, stdin from /dev/null and stderr inherited (a
// plugin's messages are for the user), and returns its stdout (at most
// 1 MiB). A program still running after `timeout` is killed
// (DeadlineExceeded); one that cannot be started is NotFound, one that fails
// Unavailable. `what` names it in errors.
StatusOr<std::string> RunCapture(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env, std::string_view what,
                                 std::chrono::milliseconds timeout);

}  // namespace kcache

#endif  // KCACHE_SRC_UTIL_SUBPROCESS_H_
