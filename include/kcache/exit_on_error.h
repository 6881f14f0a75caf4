// SPDX-License-Identifier: Apache-2.0

// The status macros for main(), which returns no Status: on error they print
// "error: STATUS" to standard error and end the process with exit code 1.
//
//   int main() {
//     KCACHE_ASSIGN_OR_EXIT(kcache::RestConfig config, kcache::LoadClientConfig({}));
//     KCACHE_EXIT_IF_ERROR(factory->Start());
//   }
//
// Thread-safety: ExitWithError calls std::exit: static destructors run and
// other threads are not joined, so call it before starting them or after
// stopping them.

#ifndef KCACHE_EXIT_ON_ERROR_H_
#define KCACHE_EXIT_ON_ERROR_H_

#include <utility>

#include "kcache/export.h"
#include "kcache/status.h"
#include "kcache/status_or.h"

namespace kcache {

[[noreturn]] KCACHE_EXPORT void ExitWithError(const Status& status);

}  // namespace kcache

// As KCACHE_RETURN_IF_ERROR, ending the process instead of returning.
#define KCACHE_EXIT_IF_ERROR(expr)                             \
  do {                                                         \
    ::kcache::Status _kcache_st = (expr);                      \
    if (!_kcache_st.ok()) ::kcache::ExitWithError(_kcache_st); \
  } while (0)

// As KCACHE_ASSIGN_OR_RETURN, ending the process instead of returning.
#define KCACHE_ASSIGN_OR_EXIT(lhs, expr) \
  KCACHE_ASSIGN_OR_EXIT_IMPL_(KCACHE_STATUS_MACROS_CONCAT_(_kcache_so_, __LINE__), lhs, expr)
#define KCACHE_ASSIGN_OR_EXIT_IMPL_(tmp, lhs, expr)     \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) ::kcache::ExitWithError(tmp.status()); \
  lhs = std::move(tmp).value()

#endif  // KCACHE_EXIT_ON_ERROR_H_
