// The error a store returns when its key function fails.

#ifndef KCACHE_SRC_STORE_KEY_ERROR_H_
#define KCACHE_SRC_STORE_KEY_ERROR_H_

#include "kcache/object.h"
#include "kcache/status.h"

namespace kcache {

// Same code as `cause`; message "couldn't create key for object <what>: <cause>",
// where <what> names the object by kind/namespace/name or its first bytes.
Status KeyError(const Object& object, const Status& cause);

}  // namespace kcache

#endif  // KCACHE_SRC_STORE_KEY_ERROR_H_
