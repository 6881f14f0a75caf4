#include "store/key_error.h"

#include <string>

namespace kcache {

Status KeyError(const Object& object, const Status& cause) {
  std::string what;
  if (object.has_metadata()) {
    what = object.kind().empty() ? "" : object.kind() + " ";
    what += object.namespace_().empty() ? object.name() : object.namespace_() + "/" + object.name();
  } else {
    constexpr size_t kMaxBytes = 64;
    what = std::string(object.json().substr(0, kMaxBytes));
    if (object.json().size() > kMaxBytes) what += "...";
  }
  return Status(cause.code(), "couldn't create key for object " + what + ": " +
                                  std::string(cause.message()));
}

}  // namespace kcache
