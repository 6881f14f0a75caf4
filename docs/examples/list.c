// SPDX-License-Identifier: Apache-2.0

/* Lists a keyspace of a kcache cache or snapshot through the C API
 * (kcache/c.h), streaming: one object in memory at a time.
 *
 *   list PATH KEYSPACE [LABEL_SELECTOR]
 *
 * PATH is a cache directory (opened read-only, also while kcache sync writes
 * it) or a snapshot file. Prints each object's key and the count.
 *
 * Build against an installed kcache:
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic list.c $(pkg-config --cflags --libs kcache-c)
 */
#include <kcache/c.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int fail(const char* what, kcache_code code, char* err) {
  fprintf(stderr, "list: %s: %s: %s\n", what, kcache_code_name(code), err ? err : "");
  kcache_free(err);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: list PATH KEYSPACE [LABEL_SELECTOR]\n");
    return 2;
  }
  if (kcache_c_version() / 1000 != KCACHE_C_VERSION_MAJOR) {
    fprintf(stderr, "list: built for C API %d, running with %d\n", KCACHE_C_VERSION_MAJOR,
            kcache_c_version() / 1000);
    return 1;
  }
  struct stat st;
  const int is_dir = stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode);
  kcache_cache* cache = NULL;
  char* err = NULL;
  kcache_code code = is_dir ? kcache_cache_open_read_only(argv[1], NULL, &cache, &err)
                            : kcache_snapshot_open(argv[1], NULL, &cache, &err);
  if (code != KCACHE_OK) return fail(argv[1], code, err);

  kcache_iterator* it = NULL;
  code = kcache_cache_list(cache, argv[2], NULL, argc == 4 ? argv[3] : NULL, NULL, &it, &err);
  if (code != KCACHE_OK) {
    kcache_cache_close(cache);
    return fail(argv[2], code, err);
  }
  long count = 0;
  while (kcache_iterator_next(it)) {
    size_t key_len = 0;
    const char* key = kcache_iterator_key(it, &key_len);
    printf("%.*s\n", (int)key_len, key);
    ++count;
  }
  code = kcache_iterator_status(it, &err);
  kcache_iterator_destroy(it);
  kcache_cache_close(cache);
  if (code != KCACHE_OK) return fail("listing", code, err);
  printf("%ld objects\n", count);
  return 0;
}
