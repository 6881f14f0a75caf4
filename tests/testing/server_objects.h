// SPDX-License-Identifier: Apache-2.0

// The objects a server holds at one resourceVersion, to compare a cache with.
#ifndef KCACHE_TESTS_TESTING_SERVER_OBJECTS_H_
#define KCACHE_TESTS_TESTING_SERVER_OBJECTS_H_

#include <map>
#include <string>

#include "kcache/rest_client.h"

namespace kcache::testing {

// namespace/name -> resourceVersion
using Objects = std::map<std::string, std::string>;

// The server's `resource` objects at `rv` exactly (a LIST with
// resourceVersionMatch=Exact, in one page). Each failure is tried again, up
// to `attempts` requests in all, for a server that injects faults; the last
// error is returned (Expired once `rv` has left the server's history).
inline StatusOr<Objects> ServerObjectsAt(RestClient& client, const ResourceRef& resource,
                                         const std::string& rv, int attempts = 4) {
  ListOptions o;
  o.resource_version = rv;
  o.resource_version_match = "Exact";
  Status last = Status::InvalidArgument("no attempt");
  for (int attempt = 0; attempt < attempts; ++attempt) {
    StatusOr<ObjectList> list = client.List(resource, o);
    if (list.ok()) {
      Objects out;
      for (const ObjectPtr& p : list->items)
        out[p->namespace_() + "/" + p->name()] = p->resource_version();
      return out;
    }
    last = list.status();
  }
  return last;
}

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_SERVER_OBJECTS_H_
