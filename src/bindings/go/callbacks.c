// SPDX-License-Identifier: Apache-2.0

// Handlers from C to Go: the C API's callbacks, each calling the exported
// Go function with the handle (a runtime/cgo.Handle) it was registered with.
#include <stdint.h>

#include <kcache/c.h>

#include "_cgo_export.h"

static void on_add(void* user, const char* object, size_t len, int initial) {
  kcacheGoOnAdd((uintptr_t)user, (char*)object, len, initial);
}

static void on_update(void* user, const char* old_object, size_t old_len, const char* new_object,
                      size_t new_len) {
  kcacheGoOnUpdate((uintptr_t)user, (char*)old_object, old_len, (char*)new_object, new_len);
}

static void on_delete(void* user, const char* object, size_t len, int unknown) {
  kcacheGoOnDelete((uintptr_t)user, (char*)object, len, unknown);
}

kcache_code kcache_go_add_handler(kcache_informer* informer, uintptr_t handle, char** errmsg) {
  return kcache_informer_add_handler(informer, on_add, on_update, on_delete, (void*)handle,
                                     errmsg);
}
