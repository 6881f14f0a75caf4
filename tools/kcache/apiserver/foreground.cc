// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/apiserver/foreground.h"

#include <pthread.h>

namespace kcache::serve {

std::string ServingLine(const std::string& url) {
  if (url.starts_with("unix:")) {
    return "serving on " + url + "  (try: curl --unix-socket " + url.substr(5) +
           " http://localhost/api/v1/pods)\n";
  }
  return "serving on " + url + "  (try: kubectl --server " + url + " get pods -A)\n";
}

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

const char* StopSignals::Wait() {
  int sig = 0;
  sigwait(&set_, &sig);
  return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace kcache::serve
