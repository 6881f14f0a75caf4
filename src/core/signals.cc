// SPDX-License-Identifier: Apache-2.0

#include "kcache/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace kcache {
namespace {

std::atomic<int> first_signal{0};

}  // namespace

int StopSignal() { return first_signal.load(); }

std::stop_token SetupSignalHandler() {
  static std::stop_source source;
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // Lives as long as the process: nothing joins it.
    std::thread([set] {
      pthread_setname_np(pthread_self(), "kcache-signals");
      for (int seen = 0;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (++seen == 1) {
          first_signal.store(sig);
          source.request_stop();
        } else {
          _exit(1);  // a second signal: the shutdown hangs
        }
      }
    }).detach();
  });
  return source.get_token();
}

}  // namespace kcache
