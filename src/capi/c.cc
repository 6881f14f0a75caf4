// SPDX-License-Identifier: Apache-2.0

// The C API (kcache/c.h) over the C++ library: each handle holds the C++
// object it stands for; each call turns a Status into a code and a message,
// and keeps exceptions (std::bad_alloc) on this side.

#include "kcache/c.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcache/cache.h"
#include "kcache/field_selector.h"
#include "kcache/indexer.h"
#include "kcache/informer.h"
#include "kcache/informer_factory.h"
#include "kcache/label_selector.h"
#include "kcache/rest_client.h"
#include "kcache/rest_config.h"
#include "kcache/snapshot.h"
#include "kcache/version.h"

using kcache::Status;
using kcache::StatusOr;

namespace {

// The C handles are incomplete types outside this file (and in its debug
// information, which the ABI check reads): each is one of these, cast.
struct CacheOptionsHandle {
  kcache::CacheOptions options;
};

struct CacheHandle {
  std::shared_ptr<kcache::Cache> cache;
  std::mutex mu;
  // A keyspace opens once per Cache: the handle's reads share it.
  std::map<std::string, std::shared_ptr<kcache::Indexer>, std::less<>> open;
};

struct FactoryOptionsHandle {
  kcache::KubeconfigOptions kubeconfig;
  kcache::InformerFactoryOptions factory;
};

struct FactoryHandle;

struct InformerHandle {
  std::shared_ptr<kcache::SharedIndexInformer> informer;
  FactoryHandle* factory;
};

struct FactoryHandle {
  std::unique_ptr<kcache::InformerFactory> factory;
  std::mutex mu;
  // Handles lent by kcache_factory_informer, one per keyspace.
  std::map<std::string, std::unique_ptr<InformerHandle>> informers;
};

struct IteratorHandle {
  std::shared_ptr<const kcache::Indexer> indexer;  // keeps the keyspace open
  std::unique_ptr<kcache::ObjectIterator> it;
  kcache::LabelSelector labels;
  kcache::FieldSelector fields;
  bool started = false;
  Status status;
};

#define KCACHE_C_HANDLE(c_type, handle)                                           \
  [[maybe_unused]] handle* Of(c_type* p) { return reinterpret_cast<handle*>(p); } \
  [[maybe_unused]] const handle* Of(const c_type* p) {                            \
    return reinterpret_cast<const handle*>(p);                                    \
  }                                                                               \
  [[maybe_unused]] c_type* Out(handle* p) { return reinterpret_cast<c_type*>(p); }
KCACHE_C_HANDLE(kcache_cache_options, CacheOptionsHandle)
KCACHE_C_HANDLE(kcache_cache, CacheHandle)
KCACHE_C_HANDLE(kcache_factory_options, FactoryOptionsHandle)
KCACHE_C_HANDLE(kcache_informer, InformerHandle)
KCACHE_C_HANDLE(kcache_factory, FactoryHandle)
KCACHE_C_HANDLE(kcache_iterator, IteratorHandle)
#undef KCACHE_C_HANDLE

char* CopyOut(std::string_view s, size_t* len) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  if (len) *len = s.size();
  return p;
}

kcache_code Fail(const Status& st, char** errmsg) {
  if (errmsg) *errmsg = CopyOut(st.message(), nullptr);
  return static_cast<kcache_code>(st.code());
}

// Runs `fn` (returning a Status), keeping exceptions on this side.
template <typename Fn>
kcache_code Call(char** errmsg, Fn&& fn) {
  try {
    Status st = fn();
    return st.ok() ? KCACHE_OK : Fail(st, errmsg);
  } catch (const std::bad_alloc&) {
    return Fail(Status::ResourceExhausted("out of memory"), errmsg);
  } catch (const std::exception& e) {
    return Fail(Status::Internal(e.what()), errmsg);
  }
}

Status Required(const void* p, const char* what) {
  return p ? Status::OK() : Status::InvalidArgument(std::string(what) + " is NULL");
}

std::string Str(const char* s) { return s ? s : ""; }

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  char buf[32] = "";
  gmtime_r(&secs, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::ordered_json StatsJson(const kcache::KeyspaceStats& s) {
  nlohmann::ordered_json j = {{"name", s.name},
                              {"objects", s.objects},
                              {"bytesOnDisk", s.bytes_on_disk},
                              {"resourceVersion", s.resource_version},
                              {"relistInProgress", s.relist_in_progress}};
  if (s.last_sync) j["lastSync"] = Rfc3339(*s.last_sync);
  if (s.resource) {
    j["resource"] = {{"group", s.resource->group},
                     {"version", s.resource->version},
                     {"resource", s.resource->resource},
                     {"kind", s.resource->kind},
                     {"namespaced", s.resource->namespaced}};
  }
  return j;
}

Status ManifestOut(const kcache::SnapshotManifest& m, char** out, size_t* len) {
  if (!out) return Status::OK();
  nlohmann::ordered_json resources = nlohmann::ordered_json::array();
  for (const kcache::KeyspaceStats& s : m.resources) {
    resources.push_back(
        {{"name", s.name}, {"objects", s.objects}, {"resourceVersion", s.resource_version}});
  }
  nlohmann::ordered_json j = {{"formatVersion", m.format_version},
                              {"storageFormat", m.storage_format},
                              {"created", Rfc3339(m.created)},
                              {"resources", std::move(resources)}};
  *out = CopyOut(j.dump(), len);
  return Status::OK();
}

kcache::CacheOptions OptionsOf(const kcache_cache_options* o) {
  return o ? Of(o)->options : kcache::CacheOptions{};
}

// A cache handle for what `open` opens at `path`.
template <typename Open>
kcache_code OpenHandle(const char* path, kcache_cache** cache, char** errmsg, Open&& open) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(path, "path"));
    KCACHE_RETURN_IF_ERROR(Required(cache, "cache"));
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Cache> c, open());
    auto handle = std::make_unique<CacheHandle>();
    handle->cache = std::move(c);
    *cache = Out(handle.release());
    return Status::OK();
  });
}

Status OpenIterator(std::shared_ptr<const kcache::Indexer> indexer, const char* ns,
                    const char* label_selector, const char* field_selector, kcache_iterator** out) {
  KCACHE_RETURN_IF_ERROR(Required(out, "it"));
  auto it = std::make_unique<IteratorHandle>();
  KCACHE_ASSIGN_OR_RETURN(it->labels, kcache::LabelSelector::Parse(Str(label_selector)));
  KCACHE_ASSIGN_OR_RETURN(it->fields, kcache::FieldSelector::Parse(Str(field_selector)));
  // A namespace streams from its index; all of them in key order.
  it->it = Str(ns).empty() ? indexer->NewIterator()
                           : indexer->NewIndexIterator(kcache::kNamespaceIndex, Str(ns));
  it->indexer = std::move(indexer);
  *out = Out(it.release());
  return Status::OK();
}

Status ObjectOut(const StatusOr<kcache::ObjectPtr>& o, char** out, size_t* len) {
  if (!o.ok()) return o.status();
  if (!*o) return Status::NotFound("no object");
  if (out) *out = CopyOut((*o)->json(), len);
  return Status::OK();
}

// NotFound unless the cache has `keyspace`: a reader must not create one.
Status RequireKeyspace(kcache_cache* cache, const char* keyspace) {
  KCACHE_RETURN_IF_ERROR(Required(cache, "cache"));
  KCACHE_RETURN_IF_ERROR(Required(keyspace, "keyspace"));
  KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> names, Of(cache)->cache->ListKeyspaces());
  if (std::find(names.begin(), names.end(), keyspace) == names.end()) {
    return Status::NotFound(std::string("the cache has no keyspace \"") + keyspace + "\"");
  }
  return Status::OK();
}

Status KeyspaceOf(kcache_cache* cache, const char* keyspace,
                  std::shared_ptr<kcache::Indexer>* out) {
  KCACHE_RETURN_IF_ERROR(RequireKeyspace(cache, keyspace));
  std::lock_guard<std::mutex> lock(Of(cache)->mu);
  auto it = Of(cache)->open.find(keyspace);
  if (it == Of(cache)->open.end()) {
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::Indexer> indexer,
                            Of(cache)->cache->OpenKeyspace(keyspace));
    it = Of(cache)->open.emplace(keyspace, std::move(indexer)).first;
  }
  *out = it->second;
  return Status::OK();
}

// A write of the collection `informer` watches, in namespace `ns` (or the
// object's): `write(client, ref)` on the factory's client; the object it
// returns, if any, goes to `result`.
template <typename Write>
kcache_code WriteCall(kcache_informer* informer, const char* ns, char** result, size_t* result_len,
                      char** errmsg, Write&& write) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(informer, "informer"));
    std::optional<kcache::ResourceRef> ref = Of(informer)->informer->Ref();
    if (!ref) return Status::FailedPrecondition("the informer knows no collection to write to");
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::RestClient> client,
                            Of(informer)->factory->factory->client());
    auto written = write(*client, ref->InNamespace(Str(ns)));
    if constexpr (std::is_same_v<decltype(written), Status>) {
      return written;
    } else {
      return ObjectOut(written, result, result_len);
    }
  });
}

}  // namespace

extern "C" {

int kcache_c_version(void) { return KCACHE_C_VERSION_MAJOR * 1000 + KCACHE_C_VERSION_MINOR; }

const char* kcache_release(void) { return kcache::GetLibraryVersion().version; }

void kcache_free(void* p) { std::free(p); }

const char* kcache_code_name(int code) {
  static const char* const kNames[] = {"OK",
                                       "Cancelled",
                                       "InvalidArgument",
                                       "NotFound",
                                       "AlreadyExists",
                                       "PermissionDenied",
                                       "Unauthenticated",
                                       "ResourceExhausted",
                                       "FailedPrecondition",
                                       "Conflict",
                                       "Expired",
                                       "Unimplemented",
                                       "Internal",
                                       "Unavailable",
                                       "DeadlineExceeded",
                                       "Corruption",
                                       "IOError",
                                       "Busy"};
  return code >= 0 && code < static_cast<int>(sizeof kNames / sizeof kNames[0]) ? kNames[code]
                                                                                : "Unknown";
}

kcache_cache_options* kcache_cache_options_create(void) {
  return Out(new (std::nothrow) CacheOptionsHandle());
}
void kcache_cache_options_destroy(kcache_cache_options* options) { delete Of(options); }
void kcache_cache_options_set_create_if_missing(kcache_cache_options* options, int create) {
  Of(options)->options.create_if_missing = create != 0;
}
void kcache_cache_options_set_block_cache_bytes(kcache_cache_options* options, size_t bytes) {
  Of(options)->options.block_cache_bytes = bytes;
}
void kcache_cache_options_set_encryption_key(kcache_cache_options* options, const char* key,
                                             size_t key_len) {
  Of(options)->options.encryption.key_encryption_key.assign(key, key_len);
}
void kcache_cache_options_set_encrypted_keyspaces(kcache_cache_options* options,
                                                  const char* const* names, size_t count) {
  Of(options)->options.encryption.keyspaces.assign(names, names + count);
}

kcache_code kcache_cache_open(const char* dir, const kcache_cache_options* options,
                              kcache_cache** cache, char** errmsg) {
  return OpenHandle(dir, cache, errmsg,
                    [&] { return kcache::Cache::Open(dir, OptionsOf(options)); });
}

kcache_code kcache_cache_open_read_only(const char* dir, const kcache_cache_options* options,
                                        kcache_cache** cache, char** errmsg) {
  return OpenHandle(dir, cache, errmsg,
                    [&] { return kcache::Cache::OpenReadOnly(dir, OptionsOf(options)); });
}

kcache_code kcache_snapshot_open(const char* path, const kcache_cache_options* options,
                                 kcache_cache** cache, char** errmsg) {
  return OpenHandle(path, cache, errmsg, [&] {
    kcache::SnapshotReadOptions o;
    o.key_encryption_key = OptionsOf(options).encryption.key_encryption_key;
    return kcache::OpenSnapshot(path, o);
  });
}

void kcache_cache_close(kcache_cache* cache) { delete Of(cache); }

kcache_code kcache_cache_refresh(kcache_cache* cache, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(cache, "cache"));
    return Of(cache)->cache->Refresh();
  });
}

kcache_code kcache_cache_keyspaces(kcache_cache* cache, char** json, size_t* json_len,
                                   char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(cache, "cache"));
    KCACHE_RETURN_IF_ERROR(Required(json, "json"));
    KCACHE_ASSIGN_OR_RETURN(std::vector<std::string> names, Of(cache)->cache->ListKeyspaces());
    *json = CopyOut(nlohmann::json(names).dump(), json_len);
    return Status::OK();
  });
}

kcache_code kcache_cache_stats(kcache_cache* cache, const char* keyspace, char** json,
                               size_t* json_len, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(json, "json"));
    KCACHE_RETURN_IF_ERROR(RequireKeyspace(cache, keyspace));
    KCACHE_ASSIGN_OR_RETURN(kcache::KeyspaceStats s, Of(cache)->cache->Stats(keyspace));
    *json = CopyOut(StatsJson(s).dump(), json_len);
    return Status::OK();
  });
}

kcache_code kcache_cache_get(kcache_cache* cache, const char* keyspace, const char* key,
                             char** object, size_t* object_len, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(key, "key"));
    std::shared_ptr<kcache::Indexer> indexer;
    KCACHE_RETURN_IF_ERROR(KeyspaceOf(cache, keyspace, &indexer));
    StatusOr<kcache::ObjectPtr> o = indexer->GetByKey(key);
    if (o.ok() && !*o) {
      return Status::NotFound(std::string(keyspace) + " \"" + key + "\" not found");
    }
    return ObjectOut(o, object, object_len);
  });
}

kcache_code kcache_cache_list(kcache_cache* cache, const char* keyspace, const char* ns,
                              const char* label_selector, const char* field_selector,
                              kcache_iterator** it, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    std::shared_ptr<kcache::Indexer> indexer;
    KCACHE_RETURN_IF_ERROR(KeyspaceOf(cache, keyspace, &indexer));
    return OpenIterator(std::move(indexer), ns, label_selector, field_selector, it);
  });
}

int kcache_iterator_next(kcache_iterator* it) {
  try {
    if (!Of(it)->status.ok()) return 0;
    for (;;) {
      if (Of(it)->started) {
        Of(it)->it->Next();
      } else {
        Of(it)->started = true;
      }
      if (!Of(it)->it->Valid()) {
        Of(it)->status = Of(it)->it->status();
        return 0;
      }
      const kcache::ObjectPtr& o = Of(it)->it->object();
      if (o && Of(it)->labels.Matches(o->labels()) && Of(it)->fields.Matches(*o)) return 1;
    }
  } catch (const std::exception& e) {
    Of(it)->status = Status::Internal(e.what());
    return 0;
  }
}

const char* kcache_iterator_key(const kcache_iterator* it, size_t* key_len) {
  const std::string& key = Of(it)->it->key();
  if (key_len) *key_len = key.size();
  return key.c_str();
}

const char* kcache_iterator_object(const kcache_iterator* it, size_t* object_len) {
  std::string_view json = Of(it)->it->object()->json();
  if (object_len) *object_len = json.size();
  return json.data();
}

kcache_code kcache_iterator_status(const kcache_iterator* it, char** errmsg) {
  return Of(it)->status.ok() ? KCACHE_OK : Fail(Of(it)->status, errmsg);
}

void kcache_iterator_destroy(kcache_iterator* it) { delete Of(it); }

kcache_factory_options* kcache_factory_options_create(void) {
  return Out(new (std::nothrow) FactoryOptionsHandle());
}
void kcache_factory_options_destroy(kcache_factory_options* options) { delete Of(options); }
void kcache_factory_options_set_kubeconfig(kcache_factory_options* options, const char* path) {
  Of(options)->kubeconfig.path = Str(path);
}
void kcache_factory_options_set_context(kcache_factory_options* options, const char* context) {
  Of(options)->kubeconfig.context = Str(context);
}
void kcache_factory_options_set_server(kcache_factory_options* options, const char* server) {
  Of(options)->kubeconfig.server = Str(server);
}
void kcache_factory_options_set_namespace(kcache_factory_options* options, const char* ns) {
  Of(options)->factory.namespace_ = Str(ns);
}
void kcache_factory_options_set_label_selector(kcache_factory_options* options,
                                               const char* selector) {
  Of(options)->factory.label_selector = Str(selector);
}
void kcache_factory_options_set_field_selector(kcache_factory_options* options,
                                               const char* selector) {
  Of(options)->factory.field_selector = Str(selector);
}

kcache_code kcache_factory_create(kcache_cache* cache, const kcache_factory_options* options,
                                  kcache_factory** factory, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(cache, "cache"));
    KCACHE_RETURN_IF_ERROR(Required(factory, "factory"));
    FactoryOptionsHandle defaults;
    const FactoryOptionsHandle& o = options ? *Of(options) : defaults;
    KCACHE_ASSIGN_OR_RETURN(kcache::RestConfig config, kcache::LoadClientConfig(o.kubeconfig));
    auto f = std::make_unique<FactoryHandle>();
    f->factory = kcache::InformerFactory::Create(std::move(config), Of(cache)->cache, o.factory);
    *factory = Out(f.release());
    return Status::OK();
  });
}

void kcache_factory_destroy(kcache_factory* factory) {
  if (!factory) return;
  Of(factory)->factory->Stop();
  delete Of(factory);
}

kcache_code kcache_factory_informer(kcache_factory* factory, const char* resource,
                                    kcache_informer** informer, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(factory, "factory"));
    KCACHE_RETURN_IF_ERROR(Required(resource, "resource"));
    KCACHE_RETURN_IF_ERROR(Required(informer, "informer"));
    KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<kcache::SharedIndexInformer> inf,
                            Of(factory)->factory->ForResource(resource));
    std::lock_guard<std::mutex> lock(Of(factory)->mu);
    for (auto& [name, handle] : Of(factory)->informers) {
      if (handle->informer == inf) {
        *informer = Out(handle.get());
        return Status::OK();
      }
    }
    auto handle = std::make_unique<InformerHandle>(InformerHandle{inf, Of(factory)});
    *informer = Out(handle.get());
    Of(factory)->informers[resource] = std::move(handle);
    return Status::OK();
  });
}

kcache_code kcache_factory_start(kcache_factory* factory, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(factory, "factory"));
    return Of(factory)->factory->Start();
  });
}

kcache_code kcache_factory_wait_for_cache_sync(kcache_factory* factory, int64_t timeout_ms,
                                               char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(factory, "factory"));
    return Of(factory)->factory->WaitForCacheSync(std::chrono::milliseconds(timeout_ms));
  });
}

void kcache_factory_stop(kcache_factory* factory) {
  if (factory) Of(factory)->factory->Stop();
}

kcache_code kcache_informer_add_handler(kcache_informer* informer, kcache_on_add on_add,
                                        kcache_on_update on_update, kcache_on_delete on_delete,
                                        void* user_data, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(informer, "informer"));
    auto h = std::make_shared<kcache::ResourceEventHandlerFuncs>();
    if (on_add) {
      h->add = [on_add, user_data](const kcache::ObjectPtr& o, bool initial) {
        on_add(user_data, o->json().data(), o->json().size(), initial ? 1 : 0);
      };
    }
    if (on_update) {
      h->update = [on_update, user_data](const kcache::ObjectPtr& o, const kcache::ObjectPtr& n) {
        on_update(user_data, o->json().data(), o->json().size(), n->json().data(),
                  n->json().size());
      };
    }
    if (on_delete) {
      h->del = [on_delete, user_data](const kcache::DeletedObject& d) {
        if (const kcache::ObjectPtr* o = std::get_if<kcache::ObjectPtr>(&d)) {
          on_delete(user_data, (*o)->json().data(), (*o)->json().size(), 0);
        } else {
          const kcache::ObjectPtr& last = std::get<kcache::DeletedFinalStateUnknown>(d).obj;
          std::string_view json = last ? last->json() : std::string_view();
          on_delete(user_data, json.data(), json.size(), 1);
        }
      };
    }
    return Of(informer)->informer->AddEventHandler(std::move(h)).status();
  });
}

int kcache_informer_has_synced(const kcache_informer* informer) {
  return informer && Of(informer)->informer->HasSynced() ? 1 : 0;
}

char* kcache_informer_resource_version(const kcache_informer* informer) {
  return CopyOut(informer ? Of(informer)->informer->LastSyncResourceVersion() : "", nullptr);
}

kcache_code kcache_informer_wait_for_resource_version(kcache_informer* informer, const char* rv,
                                                      int64_t timeout_ms, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(informer, "informer"));
    KCACHE_RETURN_IF_ERROR(Required(rv, "rv"));
    return Of(informer)->informer->WaitForResourceVersion(rv,
                                                          std::chrono::milliseconds(timeout_ms));
  });
}

kcache_code kcache_informer_get(kcache_informer* informer, const char* ns, const char* name,
                                char** object, size_t* object_len, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(informer, "informer"));
    KCACHE_RETURN_IF_ERROR(Required(name, "name"));
    kcache::Lister lister = Of(informer)->informer->GetLister();
    return ObjectOut(Str(ns).empty() ? lister.Get(name) : lister.Namespace(Str(ns)).Get(name),
                     object, object_len);
  });
}

kcache_code kcache_informer_list(kcache_informer* informer, const char* ns,
                                 const char* label_selector, const char* field_selector,
                                 kcache_iterator** it, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(informer, "informer"));
    return OpenIterator(Of(informer)->informer->GetIndexer(), ns, label_selector, field_selector,
                        it);
  });
}

kcache_code kcache_informer_create_object(kcache_informer* informer, const char* ns,
                                          const char* object, size_t object_len, char** result,
                                          size_t* result_len, char** errmsg) {
  if (!object) return Fail(Status::InvalidArgument("object is NULL"), errmsg);
  return WriteCall(informer, ns, result, result_len, errmsg,
                   [&](kcache::RestClient& c, const kcache::ResourceRef& ref) {
                     return c.Create(ref, std::string_view(object, object_len));
                   });
}

kcache_code kcache_informer_update_object(kcache_informer* informer, const char* ns,
                                          const char* object, size_t object_len, char** result,
                                          size_t* result_len, char** errmsg) {
  if (!object) return Fail(Status::InvalidArgument("object is NULL"), errmsg);
  return WriteCall(informer, ns, result, result_len, errmsg,
                   [&](kcache::RestClient& c, const kcache::ResourceRef& ref) {
                     return c.Update(ref, std::string_view(object, object_len));
                   });
}

kcache_code kcache_informer_patch_object(kcache_informer* informer, const char* ns,
                                         const char* name, kcache_patch_type type,
                                         const char* patch, size_t patch_len, char** result,
                                         size_t* result_len, char** errmsg) {
  if (!name || !patch) return Fail(Status::InvalidArgument("name or patch is NULL"), errmsg);
  kcache::PatchType t;
  switch (type) {
    case KCACHE_PATCH_MERGE:
      t = kcache::PatchType::kMerge;
      break;
    case KCACHE_PATCH_JSON:
      t = kcache::PatchType::kJson;
      break;
    case KCACHE_PATCH_STRATEGIC_MERGE:
      t = kcache::PatchType::kStrategicMerge;
      break;
    default:
      return Fail(Status::InvalidArgument("unknown patch type " + std::to_string(type)), errmsg);
  }
  return WriteCall(informer, ns, result, result_len, errmsg,
                   [&](kcache::RestClient& c, const kcache::ResourceRef& ref) {
                     return c.Patch(ref, name, t, std::string_view(patch, patch_len));
                   });
}

kcache_code kcache_informer_delete_object(kcache_informer* informer, const char* ns,
                                          const char* name, char** errmsg) {
  if (!name) return Fail(Status::InvalidArgument("name is NULL"), errmsg);
  return WriteCall(
      informer, ns, nullptr, nullptr, errmsg,
      [&](kcache::RestClient& c, const kcache::ResourceRef& ref) { return c.Delete(ref, name); });
}

kcache_code kcache_snapshot_export(kcache_cache* cache, const char* path, int zstd_level,
                                   char** manifest, size_t* manifest_len, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(cache, "cache"));
    KCACHE_RETURN_IF_ERROR(Required(path, "path"));
    kcache::ExportOptions o;
    if (zstd_level != 0) o.zstd_level = zstd_level;
    KCACHE_ASSIGN_OR_RETURN(kcache::SnapshotManifest m,
                            kcache::ExportSnapshot(*Of(cache)->cache, path, o));
    return ManifestOut(m, manifest, manifest_len);
  });
}

kcache_code kcache_snapshot_import(const char* path, const char* dir,
                                   const kcache_cache_options* options, char** manifest,
                                   size_t* manifest_len, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(path, "path"));
    KCACHE_RETURN_IF_ERROR(Required(dir, "dir"));
    kcache::ImportOptions o;
    o.cache = OptionsOf(options);
    KCACHE_ASSIGN_OR_RETURN(kcache::SnapshotManifest m, kcache::ImportSnapshot(path, dir, o));
    return ManifestOut(m, manifest, manifest_len);
  });
}

kcache_code kcache_snapshot_verify(const char* path, const kcache_cache_options* options,
                                   char** manifest, size_t* manifest_len, char** errmsg) {
  return Call(errmsg, [&]() -> Status {
    KCACHE_RETURN_IF_ERROR(Required(path, "path"));
    KCACHE_ASSIGN_OR_RETURN(
        kcache::SnapshotManifest m,
        kcache::VerifySnapshot(path, {}, OptionsOf(options).encryption.key_encryption_key));
    return ManifestOut(m, manifest, manifest_len);
  });
}

}  // extern "C"
