// SPDX-License-Identifier: Apache-2.0

// The label selector parser. Properties: a parsed selector prints a form
// that parses to itself, and both match the same labels.
#include "fuzz/fuzz.h"
#include "kcache/label_selector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  auto sel = kcache::LabelSelector::Parse(kcache::fuzz::Bytes(data, size));
  if (!sel.ok()) return 0;
  std::string printed = sel->String();
  auto again = kcache::LabelSelector::Parse(printed);
  Check(again.ok(), "a printed selector does not parse",
        printed + "\n" + again.status().ToString());
  // Requirements are sorted by key, so the printed form is a fixed point.
  Check(again->String() == printed, "a printed selector prints otherwise",
        printed + "\n" + again->String());
  static const kcache::Labels kSets[] = {
      {},
      {{"app", "web"}},
      {{"app", "db"}, {"tier", "backend"}, {"env", "prod"}},
      {{"a", "1"}, {"b", "2"}, {"k8s.io/x", "y"}},
  };
  for (const kcache::Labels& labels : kSets) {
    Check(sel->Matches(labels) == again->Matches(labels),
          "a selector and its printed form match differently", printed);
  }
  return 0;
}
