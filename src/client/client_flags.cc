// SPDX-License-Identifier: Apache-2.0

#include "kcache/client_flags.h"

#include <string_view>

namespace kcache {

StatusOr<KubeconfigOptions> TakeClientFlags(std::vector<std::string>* args) {
  KubeconfigOptions o;
  struct Flag {
    std::string_view name;
    std::string_view shorthand;
    std::string* dst;
  };
  const Flag flags[] = {{"--kubeconfig", "", &o.path},
                        {"--context", "", &o.context},
                        {"--server", "-s", &o.server},
                        {"--namespace", "-n", &o.namespace_}};
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a == "--") {  // the rest are arguments
      rest.insert(rest.end(), args->begin() + static_cast<ptrdiff_t>(i), args->end());
      break;
    }
    const Flag* matched = nullptr;
    std::string value;
    bool has_value = false;
    for (const Flag& f : flags) {
      for (std::string_view spelled : {f.name, f.shorthand}) {
        if (spelled.empty()) continue;
        if (a == spelled) {
          matched = &f;
        } else if (a.size() > spelled.size() && a.compare(0, spelled.size(), spelled) == 0 &&
                   a[spelled.size()] == '=') {
          matched = &f;
          value = a.substr(spelled.size() + 1);
          has_value = true;
        }
        if (matched) break;
      }
      if (matched) break;
    }
    if (!matched) {
      rest.push_back(a);
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args->size()) {
        return Status::InvalidArgument("flag needs an argument: " + std::string(matched->name));
      }
      value = (*args)[++i];
    }
    *matched->dst = std::move(value);
  }
  *args = std::move(rest);
  return o;
}

StatusOr<RestConfig> RestConfigFromFlags(std::vector<std::string>* args) {
  KCACHE_ASSIGN_OR_RETURN(KubeconfigOptions o, TakeClientFlags(args));
  return LoadClientConfig(o);
}

}  // namespace kcache
