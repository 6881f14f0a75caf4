// SPDX-License-Identifier: Apache-2.0

/* kcache's C API: libkcache-c, the gateway to kcache for languages other
 * than C++ (docs/bindings.md).
 *
 * The C++ API of libkcache is free to change between releases; this one is
 * not. It lives in a shared library of its own (libkcache-c.so.1) that
 * exports these functions and nothing else, and its ABI is checked against
 * a recorded baseline in CI. A change that breaks it bumps
 * KCACHE_C_VERSION_MAJOR and the soname; additions bump the minor version.
 *
 * Conventions:
 * - Handles are opaque; each kind has a create (or open) and a destroy (or
 *   close). Destroying NULL does nothing.
 * - A fallible call returns a kcache_code (KCACHE_OK is 0). Its last
 *   parameter, `char** errmsg`, may be NULL; otherwise on failure *errmsg
 *   is set to a message the caller frees with kcache_free(), and on success
 *   it is left untouched.
 * - Strings in are NUL-terminated UTF-8 and borrowed for the call only.
 *   Bytes (objects: JSON documents) go as a pointer and a length.
 * - Out strings and bytes (char** with a size_t* length) are the caller's,
 *   freed with kcache_free(); they are also NUL-terminated.
 * - What a call lends (a `const char*` it returns) stays valid as its
 *   comment says, never past the handle's destruction.
 * - Callbacks take the `void* user_data` given with them and say on which
 *   thread they run. No C++ exception crosses this API.
 * - Thread-safety: every handle may be used from any thread, concurrently,
 *   except iterators, which belong to one thread at a time.
 */

#ifndef KCACHE_C_H_
#define KCACHE_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KCACHE_C_EXPORT __attribute__((visibility("default")))
#else
#define KCACHE_C_EXPORT
#endif

/* The version of this header; kcache_c_version() gives the library's. A
 * program built against major M runs with any libkcache-c.so.M whose minor
 * version is at least the one it was built with. */
#define KCACHE_C_VERSION_MAJOR 1
#define KCACHE_C_VERSION_MINOR 0

/* The library's C API version as MAJOR * 1000 + MINOR. */
KCACHE_C_EXPORT int kcache_c_version(void);
/* The kcache release the library was built from ("0.1.0"); static. */
KCACHE_C_EXPORT const char* kcache_release(void);

/* Frees what a call gave the caller (messages, strings, objects). */
KCACHE_C_EXPORT void kcache_free(void* p);

/* ---- Errors ---------------------------------------------------------- */

typedef enum kcache_code {
  KCACHE_OK = 0,
  KCACHE_CANCELLED = 1,           /* stopped by the caller */
  KCACHE_INVALID_ARGUMENT = 2,    /* bad input: malformed JSON, a bad selector */
  KCACHE_NOT_FOUND = 3,           /* the object, keyspace or file does not exist */
  KCACHE_ALREADY_EXISTS = 4,      /* HTTP 409 AlreadyExists */
  KCACHE_PERMISSION_DENIED = 5,   /* HTTP 403 */
  KCACHE_UNAUTHENTICATED = 6,     /* HTTP 401 */
  KCACHE_RESOURCE_EXHAUSTED = 7,  /* HTTP 429 */
  KCACHE_FAILED_PRECONDITION = 8, /* the state does not allow it (a write to a reader) */
  KCACHE_CONFLICT = 9,            /* HTTP 409 Conflict (a stale resourceVersion), or a
                                     concurrent change won: read again and retry */
  KCACHE_EXPIRED = 10,            /* HTTP 410 Gone */
  KCACHE_UNIMPLEMENTED = 11,      /* e.g. a newer on-disk format */
  KCACHE_INTERNAL = 12,           /* HTTP 500, a broken invariant */
  KCACHE_UNAVAILABLE = 13,        /* HTTP 503, connection refused */
  KCACHE_DEADLINE_EXCEEDED = 14,  /* a timeout */
  KCACHE_CORRUPTION = 15,         /* data that fails its checks */
  KCACHE_IO_ERROR = 16,           /* the system refused a read or write */
  KCACHE_BUSY = 17                /* locked by another process */
} kcache_code;

/* The name of a kcache_code ("NotFound"), "Unknown" for another value;
 * static. */
KCACHE_C_EXPORT const char* kcache_code_name(int code);

/* ---- Caches ---------------------------------------------------------- */

typedef struct kcache_cache kcache_cache;
typedef struct kcache_cache_options kcache_cache_options;

/* Options of kcache_cache_open; defaults as CacheOptions' (kcache/cache.h). */
KCACHE_C_EXPORT kcache_cache_options* kcache_cache_options_create(void);
KCACHE_C_EXPORT void kcache_cache_options_destroy(kcache_cache_options* options);
/* Whether to create a missing cache (default 1). */
KCACHE_C_EXPORT void kcache_cache_options_set_create_if_missing(kcache_cache_options* options,
                                                                int create);
/* The block cache's size (default 64 MiB). */
KCACHE_C_EXPORT void kcache_cache_options_set_block_cache_bytes(kcache_cache_options* options,
                                                                size_t bytes);
/* The key-encryption key (32 bytes, copied) that opens encrypted keyspaces,
 * and seals those named by kcache_cache_options_set_encrypted_keyspaces (by
 * default "secrets") when writing. */
KCACHE_C_EXPORT void kcache_cache_options_set_encryption_key(kcache_cache_options* options,
                                                             const char* key, size_t key_len);
/* The keyspaces a writer seals: `count` names, copied. */
KCACHE_C_EXPORT void kcache_cache_options_set_encrypted_keyspaces(kcache_cache_options* options,
                                                                  const char* const* names,
                                                                  size_t count);

/* Opens (or creates) the cache in `dir` for writing: one writer per
 * directory (KCACHE_BUSY otherwise). `options` may be NULL. */
KCACHE_C_EXPORT kcache_code kcache_cache_open(const char* dir, const kcache_cache_options* options,
                                              kcache_cache** cache, char** errmsg);
/* Opens `dir` for reading only, also while another process writes it; reads
 * see it as of opening or of the last kcache_cache_refresh. */
KCACHE_C_EXPORT kcache_code kcache_cache_open_read_only(const char* dir,
                                                        const kcache_cache_options* options,
                                                        kcache_cache** cache, char** errmsg);
/* Opens a snapshot file in place, read-only, after checking it whole. Of
 * `options` only the encryption key is used. */
KCACHE_C_EXPORT kcache_code kcache_snapshot_open(const char* path,
                                                 const kcache_cache_options* options,
                                                 kcache_cache** cache, char** errmsg);
/* Closes the caller's handle; the files close once informers made over the
 * cache are destroyed too. */
KCACHE_C_EXPORT void kcache_cache_close(kcache_cache* cache);
/* A reader catches up with the writer. */
KCACHE_C_EXPORT kcache_code kcache_cache_refresh(kcache_cache* cache, char** errmsg);

/* The keyspaces ("pods", "deployments.apps") as a JSON array of strings. */
KCACHE_C_EXPORT kcache_code kcache_cache_keyspaces(kcache_cache* cache, char** json,
                                                   size_t* json_len, char** errmsg);
/* A keyspace's statistics as a JSON object: name, objects, bytesOnDisk,
 * resourceVersion, relistInProgress, lastSync (RFC 3339, absent if never),
 * and resource (group, version, resource, kind, namespaced) if recorded.
 * KCACHE_NOT_FOUND for an unknown keyspace. */
KCACHE_C_EXPORT kcache_code kcache_cache_stats(kcache_cache* cache, const char* keyspace,
                                               char** json, size_t* json_len, char** errmsg);

/* The object `key` ("namespace/name", or "name" for a cluster-scoped one)
 * of `keyspace`, as JSON. KCACHE_NOT_FOUND if absent. A keyspace opens once
 * per cache: over a cache that a factory fills, read through the informer
 * (kcache_informer_get), which holds it (KCACHE_FAILED_PRECONDITION here). */
KCACHE_C_EXPORT kcache_code kcache_cache_get(kcache_cache* cache, const char* keyspace,
                                             const char* key, char** object, size_t* object_len,
                                             char** errmsg);

/* ---- Listing --------------------------------------------------------- */

typedef struct kcache_iterator kcache_iterator;

/* Streams the objects of `keyspace` in key order, one at a time (never the
 * whole list in memory): those of namespace `ns` (NULL or "" for all) that
 * match `label_selector` and `field_selector` (NULL or "" for all; kubectl's
 * syntax). KCACHE_INVALID_ARGUMENT for a bad selector, KCACHE_NOT_FOUND for
 * an unknown keyspace. */
KCACHE_C_EXPORT kcache_code kcache_cache_list(kcache_cache* cache, const char* keyspace,
                                              const char* ns, const char* label_selector,
                                              const char* field_selector, kcache_iterator** it,
                                              char** errmsg);
/* Moves to the next object: 1 if there is one, 0 at the end or on an error
 * (then kcache_iterator_status says which). The first call moves to the
 * first object. */
KCACHE_C_EXPORT int kcache_iterator_next(kcache_iterator* it);
/* The current object's key and JSON, lent until the next call of
 * kcache_iterator_next or kcache_iterator_destroy. */
KCACHE_C_EXPORT const char* kcache_iterator_key(const kcache_iterator* it, size_t* key_len);
KCACHE_C_EXPORT const char* kcache_iterator_object(const kcache_iterator* it, size_t* object_len);
/* KCACHE_OK, or why iteration ended early. */
KCACHE_C_EXPORT kcache_code kcache_iterator_status(const kcache_iterator* it, char** errmsg);
KCACHE_C_EXPORT void kcache_iterator_destroy(kcache_iterator* it);

/* ---- Informers ------------------------------------------------------- */

typedef struct kcache_factory kcache_factory;
typedef struct kcache_factory_options kcache_factory_options;
typedef struct kcache_informer kcache_informer;

/* Where the cluster is and what to watch; defaults as kubectl's: the
 * kubeconfig of $KUBECONFIG or ~/.kube/config (in a pod without one, the
 * in-cluster configuration), all namespaces, no selectors. */
KCACHE_C_EXPORT kcache_factory_options* kcache_factory_options_create(void);
KCACHE_C_EXPORT void kcache_factory_options_destroy(kcache_factory_options* options);
KCACHE_C_EXPORT void kcache_factory_options_set_kubeconfig(kcache_factory_options* options,
                                                           const char* path);
KCACHE_C_EXPORT void kcache_factory_options_set_context(kcache_factory_options* options,
                                                        const char* context);
/* The server's address; with no kubeconfig file, that server as it is
 * (kubectl's --server). */
KCACHE_C_EXPORT void kcache_factory_options_set_server(kcache_factory_options* options,
                                                       const char* server);
KCACHE_C_EXPORT void kcache_factory_options_set_namespace(kcache_factory_options* options,
                                                          const char* ns);
KCACHE_C_EXPORT void kcache_factory_options_set_label_selector(kcache_factory_options* options,
                                                               const char* selector);
KCACHE_C_EXPORT void kcache_factory_options_set_field_selector(kcache_factory_options* options,
                                                               const char* selector);

/* Shared informers over `cache` (opened for writing), one per resource,
 * each resuming its watch from the cache with no LIST where it can. */
KCACHE_C_EXPORT kcache_code kcache_factory_create(kcache_cache* cache,
                                                  const kcache_factory_options* options,
                                                  kcache_factory** factory, char** errmsg);
/* Stops the informers (as kcache_factory_stop) and frees the factory and
 * its informer handles. */
KCACHE_C_EXPORT void kcache_factory_destroy(kcache_factory* factory);

/* The informer of the resource kubectl would call `resource` ("pods",
 * "deploy", "widgets.example.com"), made on first use. The handle is lent:
 * valid until kcache_factory_destroy. KCACHE_NOT_FOUND for an unknown
 * resource. */
KCACHE_C_EXPORT kcache_code kcache_factory_informer(kcache_factory* factory, const char* resource,
                                                    kcache_informer** informer, char** errmsg);
/* Starts every informer not started yet. */
KCACHE_C_EXPORT kcache_code kcache_factory_start(kcache_factory* factory, char** errmsg);
/* Waits until every informer has synced: KCACHE_DEADLINE_EXCEEDED after
 * `timeout_ms`, naming those that have not. */
KCACHE_C_EXPORT kcache_code kcache_factory_wait_for_cache_sync(kcache_factory* factory,
                                                               int64_t timeout_ms, char** errmsg);
/* Stops every informer; once it returns no callback runs or will. Do not
 * call it from a callback. */
KCACHE_C_EXPORT void kcache_factory_stop(kcache_factory* factory);

/* Handlers, as client-go's ResourceEventHandlerFuncs. Each runs on a thread
 * of the factory's handler pool, one call at a time per handler, in the
 * order of the changes; any may be NULL. Objects are lent for the call.
 * `in_initial_list` is 1 for the objects the informer starts with (the
 * cache's, then the server's first list); `final_state_unknown` is 1 for a
 * delete noticed by a relist, whose object is the last one known. */
typedef void (*kcache_on_add)(void* user_data, const char* object, size_t object_len,
                              int in_initial_list);
typedef void (*kcache_on_update)(void* user_data, const char* old_object, size_t old_len,
                                 const char* new_object, size_t new_len);
typedef void (*kcache_on_delete)(void* user_data, const char* object, size_t object_len,
                                 int final_state_unknown);
/* Adds a handler; it gets every object the informer holds as an add, then
 * each change. `user_data` must stay valid until the factory is stopped. */
KCACHE_C_EXPORT kcache_code kcache_informer_add_handler(kcache_informer* informer,
                                                        kcache_on_add on_add,
                                                        kcache_on_update on_update,
                                                        kcache_on_delete on_delete, void* user_data,
                                                        char** errmsg);
/* Whether the informer holds the server's state at least once. */
KCACHE_C_EXPORT int kcache_informer_has_synced(const kcache_informer* informer);
/* The resourceVersion the informer's cache is at ("" before a sync); the
 * caller frees it. */
KCACHE_C_EXPORT char* kcache_informer_resource_version(const kcache_informer* informer);
/* Waits until the informer's cache has reached resourceVersion `rv` (one a
 * write returned): KCACHE_DEADLINE_EXCEEDED after `timeout_ms`. */
KCACHE_C_EXPORT kcache_code kcache_informer_wait_for_resource_version(kcache_informer* informer,
                                                                      const char* rv,
                                                                      int64_t timeout_ms,
                                                                      char** errmsg);
/* Reads of the informer's cache, as kcache_cache_get and kcache_cache_list:
 * the lister. `ns` is "" or NULL for a cluster-scoped object. */
KCACHE_C_EXPORT kcache_code kcache_informer_get(kcache_informer* informer, const char* ns,
                                                const char* name, char** object, size_t* object_len,
                                                char** errmsg);
KCACHE_C_EXPORT kcache_code kcache_informer_list(kcache_informer* informer, const char* ns,
                                                 const char* label_selector,
                                                 const char* field_selector, kcache_iterator** it,
                                                 char** errmsg);

/* ---- Writes ---------------------------------------------------------- */

/* Writes of the informer's resource through the factory's connection, as
 * client-go's typed clients. `object` is JSON; a namespaced object's
 * namespace is `ns`, or its metadata's if `ns` is NULL or "". On success
 * *result (may be NULL) is the object as the server stored it, whose
 * resourceVersion kcache_informer_wait_for_resource_version takes. Errors
 * are the server's: KCACHE_ALREADY_EXISTS, KCACHE_NOT_FOUND, KCACHE_CONFLICT
 * (a stale resourceVersion: read again and retry), KCACHE_INVALID_ARGUMENT. */
KCACHE_C_EXPORT kcache_code kcache_informer_create_object(kcache_informer* informer, const char* ns,
                                                          const char* object, size_t object_len,
                                                          char** result, size_t* result_len,
                                                          char** errmsg);
/* A PUT: with metadata.resourceVersion set, only over that version. */
KCACHE_C_EXPORT kcache_code kcache_informer_update_object(kcache_informer* informer, const char* ns,
                                                          const char* object, size_t object_len,
                                                          char** result, size_t* result_len,
                                                          char** errmsg);

typedef enum kcache_patch_type {
  KCACHE_PATCH_MERGE = 0,          /* application/merge-patch+json */
  KCACHE_PATCH_JSON = 1,           /* application/json-patch+json */
  KCACHE_PATCH_STRATEGIC_MERGE = 2 /* built-in kinds only */
} kcache_patch_type;

KCACHE_C_EXPORT kcache_code kcache_informer_patch_object(kcache_informer* informer, const char* ns,
                                                         const char* name, kcache_patch_type type,
                                                         const char* patch, size_t patch_len,
                                                         char** result, size_t* result_len,
                                                         char** errmsg);
KCACHE_C_EXPORT kcache_code kcache_informer_delete_object(kcache_informer* informer, const char* ns,
                                                          const char* name, char** errmsg);

/* ---- Snapshots ------------------------------------------------------- */

/* Writes every keyspace of `cache` to the file `path` as of one instant
 * (zstd level `zstd_level`, 1 if 0). *manifest (may be NULL) is the file's
 * manifest as JSON: formatVersion, created, resources[] (name, objects,
 * resourceVersion). */
KCACHE_C_EXPORT kcache_code kcache_snapshot_export(kcache_cache* cache, const char* path,
                                                   int zstd_level, char** manifest,
                                                   size_t* manifest_len, char** errmsg);
/* Builds a new cache in `dir` from the snapshot file `path`; nothing is
 * left at `dir` on failure. `options` (may be NULL) are the new cache's. */
KCACHE_C_EXPORT kcache_code kcache_snapshot_import(const char* path, const char* dir,
                                                   const kcache_cache_options* options,
                                                   char** manifest, size_t* manifest_len,
                                                   char** errmsg);
/* Reads the whole file and checks it; KCACHE_CORRUPTION names the block or
 * keyspace. `options` (may be NULL) give the encryption key. */
KCACHE_C_EXPORT kcache_code kcache_snapshot_verify(const char* path,
                                                   const kcache_cache_options* options,
                                                   char** manifest, size_t* manifest_len,
                                                   char** errmsg);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KCACHE_C_H_ */
