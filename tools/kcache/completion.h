// SPDX-License-Identifier: Apache-2.0

// Shell completion: `kcache completion bash|zsh` prints a script that the
// shell loads; on each TAB the script runs `kcache __complete WORD... CUR`,
// which prints the candidates for CUR (the word under the cursor, "" after a
// space), one per line as "word" or "word<TAB>description", then a last line
// ":DIRECTIVE", where DIRECTIVE is empty (the candidates, each followed by a
// space), "nospace" (the candidates, no space after: "-o jsonpath="),
// "files" or "dirs" (the shell's own file name completion).
//
// Commands, verbs and flags come from the command table; resource types,
// object names and namespaces from the cache or snapshot that the words
// already name (--cache, --snapshot), read-only, as kubectl asks its
// server. Completion never fails: what cannot be read completes nothing.

#ifndef KCACHE_TOOLS_KCACHE_COMPLETION_H_
#define KCACHE_TOOLS_KCACHE_COMPLETION_H_

#include <ostream>
#include <string>
#include <vector>

namespace kcache::tool {

// The hidden command the scripts call; not listed by `kcache --help`.
inline constexpr char kCompleteCommand[] = "__complete";

// Writes the candidates for `args` (the words after "kcache", the last one
// being the word to complete) to `out` in the form above; returns 0.
int Complete(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_COMPLETION_H_
