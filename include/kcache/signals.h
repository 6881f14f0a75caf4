// SPDX-License-Identifier: Apache-2.0

// Stopping a controller on SIGINT and SIGTERM, as controller-runtime's
// SetupSignalHandler: the first signal asks everything to stop; a second
// ends the process at once (exit code 1), for a shutdown that hangs.
//
// Thread-safety: SetupSignalHandler may be called from any thread, any
// number of times; every call returns a token of the same stop source.

#ifndef KCACHE_SIGNALS_H_
#define KCACHE_SIGNALS_H_

#include <stop_token>

#include "kcache/export.h"

namespace kcache {

// Blocks SIGINT and SIGTERM in the calling thread (threads it starts
// afterwards inherit that) and waits for them on a thread of its own. Call
// it at the top of main(), before any thread starts: a thread started
// earlier would still receive the signals itself.
KCACHE_EXPORT std::stop_token SetupSignalHandler();

// The signal that requested the stop (SIGINT or SIGTERM), for a log line;
// 0 while none has.
KCACHE_EXPORT int StopSignal();

}  // namespace kcache

#endif  // KCACHE_SIGNALS_H_
