// SPDX-License-Identifier: Apache-2.0

// What the test process holds: sockets and named threads, read from /proc.
#ifndef KCACHE_TESTS_TESTING_PROCESS_STATS_H_
#define KCACHE_TESTS_TESTING_PROCESS_STATS_H_

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <string_view>

namespace kcache::testing {

// Open socket descriptors of this process.
inline int SocketCount() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    char target[256];
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t len = readlink(path.c_str(), target, sizeof target - 1);
    if (len > 0 && std::string_view(target, len).starts_with("socket:")) ++n;
  }
  closedir(d);
  return n;
}

// Threads of this process.
inline int ThreadCount() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Threads of this process named `name` (pthread_setname_np).
inline int ThreadsNamed(const std::string& name) {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++n;
  }
  closedir(d);
  return n;
}

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_PROCESS_STATS_H_
