// SPDX-License-Identifier: Apache-2.0

// A command of the kcache tool as one row: its name, its help and its run.
// Each command's file defines its row, and its run reads the command's own
// flags; main.cc holds the table of rows and dispatches to them.
//
// Thread-safety: rows are immutable; a run is called once, from main.

#ifndef KCACHE_TOOLS_KCACHE_COMMAND_H_
#define KCACHE_TOOLS_KCACHE_COMMAND_H_

#include <optional>
#include <string>
#include <vector>

#include "kcache/status.h"
#include "kcache/status_or.h"
#include "tools/kcache/flags.h"

namespace kcache::tool {

struct Command {
  const char* name;      // "get", "snapshot export"; a group ("snapshot") leads to its verbs
  const char* usage;     // the line after "kcache ", arguments included
  const char* summary;   // one line for the list of `kcache --help`
  const char* about;     // one paragraph for `kcache help NAME`
  const char* examples;  // lines, each example preceded by a "# ..." comment
  // Runs with this row and the arguments after the name; returns the exit
  // code.
  int (*run)(const Command& self, const std::vector<std::string>& args);
  // A flag error is told in kubectl's words and exit code (for `get`).
  bool kubectl_flag_errors = false;
};

// Every command (group verbs after their group) in the order `kcache
// --help` lists them; defined with main(), as its table.
const std::vector<const Command*>& Commands();
// The command named `name` ("get", "snapshot export"); null if none.
const Command* FindCommand(const std::string& name);

// The flags `command` defines, --help included; not for a group, which
// has none of its own. Runs the command in a mode where ParseFlags records
// the flags and returns before doing anything else; nullopt if the run
// did not get there. Main thread only.
std::optional<std::vector<cli::FlagSet::Info>> CommandFlags(const Command& command);

// The text above "Flags:" in `kcache help NAME`.
std::string HelpText(const Command& command);

// A status's message for the user: where the library asks for a key, the
// flags that give it.
std::string ErrorText(const Status& status);

// Prints "error: NAME: message" to stderr; returns 2 for InvalidArgument (a
// usage error), else 1.
int Fail(const Status& status, const std::string& name);

// Parses `args` with `flags`, adding --help. Returns -1 to go on; else the
// exit code, with the help or the flag error printed.
int ParseFlags(const Command& command, cli::FlagSet& flags, const std::vector<std::string>& args,
               std::vector<std::string>* positional);

// The same, for a command that takes no positional arguments.
int ParseFlagsOnly(const Command& command, cli::FlagSet& flags,
                   const std::vector<std::string>& args);

// --cache DIR and --snapshot FILE, the flags of every offline reader.
void SourceFlags(cli::FlagSet& flags, std::string* cache_dir, std::string* snapshot);

// --encryption-key-file, --encryption-key-env and --encryption-key-exec:
// where the key-encryption key of a cache or snapshot with encrypted
// resources comes from (docs/security.md). SourceFlags adds them too.
void KeyFlags(cli::FlagSet& flags);
// The key those flags name, loaded on the first call; "" if no flag was
// given. InvalidArgument for more than one.
StatusOr<std::string> GivenKeyEncryptionKey();

// For a group's run: prints its help and true if `args` asks for it.
bool GroupHelp(const Command& group, const std::vector<std::string>& args);

// The rows, each defined beside its run.
extern const Command kDemoCommand;   // bench/commands.cc
extern const Command kBenchCommand;  // bench/commands.cc
extern const std::vector<Command> kBenchCommands;
extern const Command kServeCommand;     // serve.cc
extern const Command kSyncCommand;      // sync.cc
extern const Command kGetCommand;       // get.cc
extern const Command kStatsCommand;     // stats.cc
extern const Command kTreeCommand;      // tree.cc
extern const Command kDiffCommand;      // diff.cc
extern const Command kSnapshotCommand;  // snapshot.cc, with its verbs:
extern const std::vector<Command> kSnapshotCommands;
extern const Command kVersionCommand;     // version.cc
extern const Command kRekeyCommand;       // rekey.cc
extern const Command kCompletionCommand;  // completion.cc

}  // namespace kcache::tool

#endif  // KCACHE_TOOLS_KCACHE_COMMAND_H_
