// SPDX-License-Identifier: Apache-2.0

// Builders for test objects.

#ifndef KCACHE_TESTS_TESTING_OBJECTS_H_
#define KCACHE_TESTS_TESTING_OBJECTS_H_

#include <string>
#include <vector>

#include "kcache/cache.h"
#include "kcache/indexer.h"
#include "kcache/object.h"

namespace kcache::testing {

// Parses `json`; fails the current test (and returns null) if it does not parse.
ObjectPtr MakeObject(const std::string& json);

// A pod-like object with the given metadata.
ObjectPtr Pod(const std::string& name, const std::string& ns = "", const std::string& rv = "",
              const Labels& labels = {}, const Labels& annotations = {});

// client-go's testStoreObject {id, val}: name = id, annotation "val" = val.
ObjectPtr TO(const std::string& id, const std::string& val);
// Key function keyTO (the id) and index function by_val ([val]).
StatusOr<std::string> KeyTO(const Object& obj);
StatusOr<std::vector<std::string>> ByVal(const Object& obj);

// Index function "by-node": the object's annotation "node", if any.
StatusOr<std::vector<std::string>> ByNode(const Object& obj);
// Keyspace options with the "by-node" index, at version "by-node@1".
KeyspaceOptions ByNodeOptions();

// Names of `objects`, in order.
std::vector<std::string> Names(const std::vector<ObjectPtr>& objects);

// Makes a cache at `dir` holding pods p0..p{n-1} of namespace ns (at
// resourceVersions 1..n) in keyspace "pods", and closes it. Fails the
// running test on an error.
void MakePodCache(const std::string& dir, int n);

}  // namespace kcache::testing

#endif  // KCACHE_TESTS_TESTING_OBJECTS_H_
