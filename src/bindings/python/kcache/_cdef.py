# SPDX-License-Identifier: Apache-2.0

"""The declarations of include/kcache/c.h, as cffi reads them.

tests/bindings/python/test_kcache.py checks that they match the header.
"""

CDEF = """
int kcache_c_version(void);
const char* kcache_release(void);
void kcache_free(void* p);
typedef enum kcache_code {
  KCACHE_OK = 0,
  KCACHE_CANCELLED = 1,
  KCACHE_INVALID_ARGUMENT = 2,
  KCACHE_NOT_FOUND = 3,
  KCACHE_ALREADY_EXISTS = 4,
  KCACHE_PERMISSION_DENIED = 5,
  KCACHE_UNAUTHENTICATED = 6,
  KCACHE_RESOURCE_EXHAUSTED = 7,
  KCACHE_FAILED_PRECONDITION = 8,
  KCACHE_CONFLICT = 9,
  KCACHE_EXPIRED = 10,
  KCACHE_UNIMPLEMENTED = 11,
  KCACHE_INTERNAL = 12,
  KCACHE_UNAVAILABLE = 13,
  KCACHE_DEADLINE_EXCEEDED = 14,
  KCACHE_CORRUPTION = 15,
  KCACHE_IO_ERROR = 16,
  KCACHE_BUSY = 17
} kcache_code;
const char* kcache_code_name(int code);
typedef struct kcache_cache kcache_cache;
typedef struct kcache_cache_options kcache_cache_options;
kcache_cache_options* kcache_cache_options_create(void);
void kcache_cache_options_destroy(kcache_cache_options* options);
void kcache_cache_options_set_create_if_missing(kcache_cache_options* options,
  int create);
void kcache_cache_options_set_block_cache_bytes(kcache_cache_options* options,
  size_t bytes);
void kcache_cache_options_set_encryption_key(kcache_cache_options* options,
  const char* key, size_t key_len);
void kcache_cache_options_set_encrypted_keyspaces(kcache_cache_options* options,
  const char* const* names,
  size_t count);
kcache_code kcache_cache_open(const char* dir, const kcache_cache_options* options,
  kcache_cache** cache, char** errmsg);
kcache_code kcache_cache_open_read_only(const char* dir,
  const kcache_cache_options* options,
  kcache_cache** cache, char** errmsg);
kcache_code kcache_snapshot_open(const char* path,
  const kcache_cache_options* options,
  kcache_cache** cache, char** errmsg);
void kcache_cache_close(kcache_cache* cache);
kcache_code kcache_cache_refresh(kcache_cache* cache, char** errmsg);
kcache_code kcache_cache_keyspaces(kcache_cache* cache, char** json,
  size_t* json_len, char** errmsg);
kcache_code kcache_cache_stats(kcache_cache* cache, const char* keyspace,
  char** json, size_t* json_len, char** errmsg);
kcache_code kcache_cache_get(kcache_cache* cache, const char* keyspace,
  const char* key, char** object, size_t* object_len,
  char** errmsg);
typedef struct kcache_iterator kcache_iterator;
kcache_code kcache_cache_list(kcache_cache* cache, const char* keyspace,
  const char* ns, const char* label_selector,
  const char* field_selector, kcache_iterator** it,
  char** errmsg);
int kcache_iterator_next(kcache_iterator* it);
const char* kcache_iterator_key(const kcache_iterator* it, size_t* key_len);
const char* kcache_iterator_object(const kcache_iterator* it, size_t* object_len);
kcache_code kcache_iterator_status(const kcache_iterator* it, char** errmsg);
void kcache_iterator_destroy(kcache_iterator* it);
typedef struct kcache_factory kcache_factory;
typedef struct kcache_factory_options kcache_factory_options;
typedef struct kcache_informer kcache_informer;
kcache_factory_options* kcache_factory_options_create(void);
void kcache_factory_options_destroy(kcache_factory_options* options);
void kcache_factory_options_set_kubeconfig(kcache_factory_options* options,
  const char* path);
void kcache_factory_options_set_context(kcache_factory_options* options,
  const char* context);
void kcache_factory_options_set_server(kcache_factory_options* options,
  const char* server);
void kcache_factory_options_set_namespace(kcache_factory_options* options,
  const char* ns);
void kcache_factory_options_set_label_selector(kcache_factory_options* options,
  const char* selector);
void kcache_factory_options_set_field_selector(kcache_factory_options* options,
  const char* selector);
kcache_code kcache_factory_create(kcache_cache* cache,
  const kcache_factory_options* options,
  kcache_factory** factory, char** errmsg);
void kcache_factory_destroy(kcache_factory* factory);
kcache_code kcache_factory_informer(kcache_factory* factory, const char* resource,
  kcache_informer** informer, char** errmsg);
kcache_code kcache_factory_start(kcache_factory* factory, char** errmsg);
kcache_code kcache_factory_wait_for_cache_sync(kcache_factory* factory,
  int64_t timeout_ms, char** errmsg);
void kcache_factory_stop(kcache_factory* factory);
typedef void (*kcache_on_add)(void* user_data, const char* object, size_t object_len,
  int in_initial_list);
typedef void (*kcache_on_update)(void* user_data, const char* old_object, size_t old_len,
  const char* new_object, size_t new_len);
typedef void (*kcache_on_delete)(void* user_data, const char* object, size_t object_len,
  int final_state_unknown);
kcache_code kcache_informer_add_handler(kcache_informer* informer,
  kcache_on_add on_add,
  kcache_on_update on_update,
  kcache_on_delete on_delete, void* user_data,
  char** errmsg);
int kcache_informer_has_synced(const kcache_informer* informer);
char* kcache_informer_resource_version(const kcache_informer* informer);
kcache_code kcache_informer_wait_for_resource_version(kcache_informer* informer,
  const char* rv,
  int64_t timeout_ms,
  char** errmsg);
kcache_code kcache_informer_get(kcache_informer* informer, const char* ns,
  const char* name, char** object, size_t* object_len,
  char** errmsg);
kcache_code kcache_informer_list(kcache_informer* informer, const char* ns,
  const char* label_selector,
  const char* field_selector, kcache_iterator** it,
  char** errmsg);
kcache_code kcache_informer_create_object(kcache_informer* informer, const char* ns,
  const char* object, size_t object_len,
  char** result, size_t* result_len,
  char** errmsg);
kcache_code kcache_informer_update_object(kcache_informer* informer, const char* ns,
  const char* object, size_t object_len,
  char** result, size_t* result_len,
  char** errmsg);
typedef enum kcache_patch_type {
  KCACHE_PATCH_MERGE = 0,
  KCACHE_PATCH_JSON = 1,
  KCACHE_PATCH_STRATEGIC_MERGE = 2
} kcache_patch_type;
kcache_code kcache_informer_patch_object(kcache_informer* informer, const char* ns,
  const char* name, kcache_patch_type type,
  const char* patch, size_t patch_len,
  char** result, size_t* result_len,
  char** errmsg);
kcache_code kcache_informer_delete_object(kcache_informer* informer, const char* ns,
  const char* name, char** errmsg);
kcache_code kcache_snapshot_export(kcache_cache* cache, const char* path,
  int zstd_level, char** manifest,
  size_t* manifest_len, char** errmsg);
kcache_code kcache_snapshot_import(const char* path, const char* dir,
  const kcache_cache_options* options,
  char** manifest, size_t* manifest_len,
  char** errmsg);
kcache_code kcache_snapshot_verify(const char* path,
  const kcache_cache_options* options,
  char** manifest, size_t* manifest_len,
  char** errmsg);
"""
