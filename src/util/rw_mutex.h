// SPDX-License-Identifier: Apache-2.0

// A reader/writer mutex that prefers writers.
//
// glibc's default rwlock (behind std::shared_mutex) prefers readers: a
// steady stream of queries can starve the writer that ingests changes
// indefinitely. This one makes new readers wait while a writer waits.

#ifndef KCACHE_SRC_UTIL_RW_MUTEX_H_
#define KCACHE_SRC_UTIL_RW_MUTEX_H_

#include <pthread.h>

namespace kcache {

// Meets the SharedMutex requirements, for std::unique_lock/std::shared_lock.
class RWMutex {
 public:
  RWMutex() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&lock_, &attr);
    pthread_rwlockattr_destroy(&attr);
  }
  ~RWMutex() { pthread_rwlock_destroy(&lock_); }
  RWMutex(const RWMutex&) = delete;
  RWMutex& operator=(const RWMutex&) = delete;

  void lock() { pthread_rwlock_wrlock(&lock_); }
  bool try_lock() { return pthread_rwlock_trywrlock(&lock_) == 0; }
  void unlock() { pthread_rwlock_unlock(&lock_); }
  void lock_shared() { pthread_rwlock_rdlock(&lock_); }
  bool try_lock_shared() { return pthread_rwlock_tryrdlock(&lock_) == 0; }
  void unlock_shared() { pthread_rwlock_unlock(&lock_); }

 private:
  pthread_rwlock_t lock_;
};

}  // namespace kcache

#endif  // KCACHE_SRC_UTIL_RW_MUTEX_H_
