// SPDX-License-Identifier: Apache-2.0

// The field selector parser. Properties: a parsed selector prints a form
// that parses, settles after one more print, and both match the same fields.
#include "fuzz/fuzz.h"
#include "kcache/field_selector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  auto sel = kcache::FieldSelector::Parse(kcache::fuzz::Bytes(data, size));
  if (!sel.ok()) return 0;
  std::string printed = sel->String();
  auto again = kcache::FieldSelector::Parse(printed);
  Check(again.ok(), "a printed selector does not parse",
        printed + "\n" + again.status().ToString());
  // Terms are sorted as written before they are parsed (as apimachinery
  // does), so "a==b,a=a" prints "a=b,a=a", which prints "a=a,a=b": the
  // printed form is stable from the second print on.
  std::string second = again->String();
  auto third = kcache::FieldSelector::Parse(second);
  Check(third.ok() && third->String() == second, "a printed selector does not settle",
        printed + "\n" + second);
  static const kcache::Fields kSets[] = {
      {},
      {{"metadata.name", "web-1"}, {"metadata.namespace", "default"}},
      {{"spec.nodeName", "node-1"}, {"status.phase", "Running"}, {"a", "b=c,d"}},
  };
  for (const kcache::Fields& fields : kSets) {
    Check(sel->Matches(fields) == again->Matches(fields),
          "a selector and its printed form match differently", printed);
  }
  return 0;
}
