// SPDX-License-Identifier: Apache-2.0

// Eventually: waiting in tests for what other threads do.
#ifndef KCACHE_TESTS_TESTING_EVENTUALLY_H_
#define KCACHE_TESTS_TESTING_EVENTUALLY_H_

#include <chrono>
#include <functional>
#include <thread>

namespace kcache::testing {

// Polls `done` until it holds or `limit` passes.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::seconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_EVENTUALLY_H_
