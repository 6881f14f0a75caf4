// SPDX-License-Identifier: Apache-2.0

// Waits for a file descriptor to become ready, on one epoll thread of the
// process (kcache-poll) started at the first wait. A fiber waiting gives its
// carrier away, so a server can spend a fiber, not a thread, on each
// connection; a plain thread waiting blocks, as poll() would.
//
// Thread-safety: safe for concurrent use, with at most one wait on a given
// file descriptor at a time.
#ifndef KCACHE_SRC_EXEC_POLLER_H_
#define KCACHE_SRC_EXEC_POLLER_H_

#include <chrono>
#include <cstdint>
#include <stop_token>

namespace kcache::exec {

enum class FdWait : uint8_t { kReadable, kWritable };

enum class FdReady : uint8_t {
  kReady,     // ready, hung up or failed: the next read or write says which
  kDeadline,  // the deadline passed first
  kStopped,   // `stop` was requested first
};

// Waits until `fd` (non-blocking) can be read or written without blocking,
// or has hung up or failed, until `deadline` or until `stop` is requested.
FdReady WaitFd(int fd, FdWait what, std::chrono::steady_clock::time_point deadline,
               std::stop_token stop = {});

}  // namespace kcache::exec

#endif  // KCACHE_SRC_EXEC_POLLER_H_
