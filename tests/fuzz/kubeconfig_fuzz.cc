// SPDX-License-Identifier: Apache-2.0

// Kubeconfig loading (YAML), from a file as users give it. Property: no
// crash, hang or leak.
#include "fuzz/fuzz.h"
#include "kcache/rest_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kcache::KubeconfigOptions options;
  options.path = kcache::fuzz::WriteInputFile(kcache::fuzz::Bytes(data, size));
  auto config = kcache::LoadKubeconfig(options);
  if (config.ok()) {
    // The fields the transport reads; the ASan build checks them.
    (void)config->server.size();
    (void)config->source.size();
  }
  return 0;
}
