// SPDX-License-Identifier: Apache-2.0

/* A libmicrohttpd server for tools/bench/http-bench: every GET is answered
 * with N bytes ("?bytes=N"), sent chunked in 1 MiB blocks from memory, as
 * kcache serve sends a LIST. It prints "port P" once it listens.
 *
 * Usage: mhd-peer (threads | epoll)
 *   threads: one thread per connection (kcache's own server's model);
 *   epoll:   one internal thread with epoll. */
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (1 << 20)
static char block[BLOCK];

struct body {
  uint64_t size;
};

static ssize_t fill(void* cls, uint64_t pos, char* buf, size_t max) {
  const struct body* b = cls;
  if (pos >= b->size) return MHD_CONTENT_READER_END_OF_STREAM;
  size_t n = max;
  if (n > b->size - pos) n = (size_t)(b->size - pos);
  if (n > BLOCK) n = BLOCK;
  memcpy(buf, block, n);
  return (ssize_t)n;
}

static enum MHD_Result answer(void* cls, struct MHD_Connection* c, const char* url,
                              const char* method, const char* version, const char* upload,
                              size_t* upload_size, void** state) {
  (void)cls, (void)url, (void)version, (void)upload, (void)upload_size;
  if (strcmp(method, "GET") != 0) return MHD_NO;
  if (*state == NULL) { /* the head: answer on the next call */
    *state = c;
    return MHD_YES;
  }
  const char* n = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "bytes");
  struct body* b = malloc(sizeof *b);
  b->size = n ? strtoull(n, NULL, 10) : 0;
  struct MHD_Response* r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BLOCK, fill, b, free);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

int main(int argc, char** argv) {
  memset(block, 'x', sizeof block);
  unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
  if (argc > 1 && strcmp(argv[1], "epoll") == 0)
    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
  struct MHD_Daemon* d = MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL,
                                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
                                          MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "mhd-peer: cannot start\n");
    return 1;
  }
  const union MHD_DaemonInfo* info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  printf("port %u\n", (unsigned)info->port);
  fflush(stdout);
  pause();
  MHD_stop_daemon(d);
  return 0;
}
