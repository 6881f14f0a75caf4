// SPDX-License-Identifier: Apache-2.0

// KCACHE_EXPORT: marks a declaration as part of libkcache's public ABI.
//
// libkcache is built with hidden symbol visibility; only declarations in
// include/kcache/ that carry this macro are exported from the shared library.
//
// Thread-safety: a macro only; nothing here runs.

#ifndef KCACHE_EXPORT_H_
#define KCACHE_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define KCACHE_EXPORT [[gnu::visibility("default")]]
#else
#define KCACHE_EXPORT
#endif

#endif  // KCACHE_EXPORT_H_
