// SPDX-License-Identifier: Apache-2.0

// The request head parser of kcache serve's HTTP server, which reads what any
// client on the network sends. Properties: it never crashes or hangs; an
// accepted head has a method without spaces, a target and headers without
// line breaks, and a decoded path no longer than its target.
#include "fuzz/fuzz.h"
#include "tools/kcache/apiserver/http_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  const std::string_view head = kcache::fuzz::Bytes(data, size);
  kcache::serve::http::Request req;
  if (!kcache::serve::http::ParseHead(head, &req)) return 0;
  Check(!req.method.empty() && req.method.find(' ') == std::string::npos,
        "an accepted method is empty or has a space", req.method);
  Check(req.target.find("\r\n") == std::string::npos, "a target with a line break", req.target);
  Check(req.path.size() <= req.target.size(), "a decoded path longer than its target", req.path);
  for (const auto& [name, value] : req.headers) {
    Check(name.find("\r\n") == std::string::npos && value.find("\r\n") == std::string::npos,
          "a header with a line break", name + ": " + value);
    Check(req.Header(name).size() <= head.size(), "a header longer than the head", name);
  }
  for (const auto& [key, value] : req.query) {
    Check(key.size() + value.size() <= req.target.size(),
          "a query parameter longer than its target", key);
  }
  return 0;
}
