// What `kcache COMMAND --help` and `kcache help COMMAND` print above the
// flags: what the command does, its arguments, and examples.

#ifndef KCACHE_TOOLS_KCACHE_HELP_H_
#define KCACHE_TOOLS_KCACHE_HELP_H_

#include <string>

namespace kcache::tool {

struct CommandHelp {
  const char* command;   // "get", "snapshot export"
  const char* usage;     // the line after "kcache ", arguments included
  const char* summary;   // one paragraph
  const char* examples;  // lines, each example preceded by a "# ..." comment
};

// The help of `command`, or null if it has none.
const CommandHelp* FindHelp(const std::string& command);

// The text above "Flags:" for `command`.
std::string HelpText(const CommandHelp& help);

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_HELP_H_
