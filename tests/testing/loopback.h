// SPDX-License-Identifier: Apache-2.0

// A client socket to a server of this process on 127.0.0.1.
#ifndef KCACHE_TESTS_TESTING_LOOPBACK_H_
#define KCACHE_TESTS_TESTING_LOOPBACK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace kcache::testing {

// A socket connected to 127.0.0.1:`port`, or -1. `receive_buffer` > 0
// shrinks its receive buffer (set before connecting, so the window is
// small from the start).
inline int ConnectLoopback(int port, int receive_buffer = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_LOOPBACK_H_
