// SPDX-License-Identifier: Apache-2.0

// Object::Parse. Properties: what parses also parses with managedFields
// dropped, parses as a whole document (nlohmann, the other JSON parser
// kcache uses) and parses again from its own bytes to the same metadata.
// (The converse of the first does not hold: dropped bytes are checked for
// structure only, as ParseOptions says.)
#include <nlohmann/json.hpp>

#include "fuzz/fuzz.h"
#include "kcache/object.h"

namespace {

void CheckReparses(const kcache::ObjectPtr& obj) {
  using kcache::fuzz::Check;
  auto doc = obj->Document();
  Check(doc.ok(), "a parsed object is not a document", doc.status().ToString());
  auto again = kcache::Object::Parse(std::string(obj->json()));
  Check(again.ok(), "an object does not parse from its own bytes", again.status().ToString());
  Check((*again)->meta().name == obj->meta().name &&
            (*again)->meta().namespace_ == obj->meta().namespace_ &&
            (*again)->meta().resource_version == obj->meta().resource_version &&
            (*again)->meta().uid == obj->meta().uid && (*again)->labels() == obj->labels() &&
            (*again)->annotations() == obj->annotations() &&
            (*again)->meta().owner_references == obj->meta().owner_references &&
            (*again)->kind() == obj->kind() && (*again)->api_version() == obj->api_version(),
        "an object parses from its own bytes to other metadata", obj->json());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  std::string json(kcache::fuzz::Bytes(data, size));
  auto plain = kcache::Object::Parse(json);
  kcache::ParseOptions options;
  options.drop_managed_fields = true;
  options.default_api_version = "v1";
  options.default_kind = "Pod";
  auto trimmed = kcache::Object::Parse(json, options);
  if (trimmed.ok()) CheckReparses(*trimmed);
  if (!plain.ok()) return 0;
  Check(trimmed.ok(), "an object parses, but not with managedFields dropped",
        trimmed.status().ToString());
  CheckReparses(*plain);
  Check((*trimmed)->meta().name == (*plain)->meta().name &&
            (*trimmed)->labels() == (*plain)->labels(),
        "dropping managedFields changed the metadata");
  (void)(*plain)->FieldValue("spec.nodeName");
  (void)(*plain)->FieldValue("status.phase");
  return 0;
}
