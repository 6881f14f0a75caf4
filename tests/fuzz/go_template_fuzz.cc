// SPDX-License-Identifier: Apache-2.0

// kubectl's -o go-template engine: any text either parses or is refused
// with a message, and a parsed template executes over an object (or fails
// with a message) without crashing, reading out of bounds or recursing
// without bound.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz.h"
#include "tools/kcache/kubectl/go_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  const std::string text(kcache::fuzz::Bytes(data, size));
  // Templates calling templates can do exponential work (as in Go); that
  // is the template's author's choice, not a defect, so few calls here.
  size_t calls = 0;
  for (size_t at = text.find("template"); at != std::string::npos;
       at = text.find("template", at + 1)) {
    ++calls;
  }
  for (size_t at = text.find("block"); at != std::string::npos; at = text.find("block", at + 1)) {
    ++calls;
  }
  if (size > 4096 || calls > 3) return 0;
  auto parsed = kcache::tool::GoTemplate::Parse(text);
  if (!parsed.ok()) {
    Check(!parsed.status().message().empty(), "a refusal without a message", text);
    return 0;
  }
  static const nlohmann::json kObject = nlohmann::json::parse(R"({
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {"name": "web-1", "labels": {"app": "web"}, "nothing": null},
    "spec": {"containers": [{"name": "web", "ports": [{"containerPort": 80}]}],
             "size": 3, "ratio": 0.25, "flag": true, "text": "aGk="}
  })");
  std::string out;
  kcache::Status st = parsed->Execute(kObject, &out);
  Check(st.ok() || !st.message().empty(), "an execution error without a message", text);
  return 0;
}
