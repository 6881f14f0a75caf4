// SPDX-License-Identifier: Apache-2.0

// The LIST response decoder. Property: every item of a decoded list is an
// object that parses again to the same metadata.
#include "client/decode.h"
#include "fuzz/fuzz.h"
#include "kcache/object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  kcache::ParseOptions options;
  options.drop_managed_fields = size % 2 == 1;
  auto list = kcache::rest::DecodeList(std::string(kcache::fuzz::Bytes(data, size)), options);
  if (!list.ok()) return 0;
  for (const kcache::ObjectPtr& item : list->items) {
    Check(item != nullptr, "a null list item");
    auto again = kcache::Object::Parse(std::string(item->json()));
    Check(again.ok(), "a list item does not parse again", again.status().ToString());
    Check((*again)->resource_version() == item->resource_version() &&
              (*again)->name() == item->name() && (*again)->namespace_() == item->namespace_(),
          "a list item parses again to other metadata", item->json());
  }
  return 0;
}
