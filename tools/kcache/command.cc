// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/command.h"

#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

#include "kcache/encryption.h"
#include "util/strings.h"

namespace kcache::tool {

namespace {

// Set while shell completion asks a command for its flags.
std::vector<cli::FlagSet::Info>* flag_capture = nullptr;

}  // namespace

std::optional<std::vector<cli::FlagSet::Info>> CommandFlags(const Command& command) {
  std::vector<cli::FlagSet::Info> flags;
  flag_capture = &flags;
  // A command's run defines its flags, then calls ParseFlags first thing,
  // which returns at once while capturing.
  const int rc = command.run(command, {});
  flag_capture = nullptr;
  if (rc != 0 || flags.empty()) return std::nullopt;
  return flags;
}

std::string HelpText(const Command& c) {
  return std::string(c.about) + "\n\nUsage:\n  kcache " + c.usage + "\n\nExamples:\n" + c.examples;
}

std::string ErrorText(const Status& status) {
  std::string text(status.message());
  // The library names no flags; the tool says which give the key.
  if (text.find("no key-encryption key was given") != std::string::npos) {
    text += " (give it with --encryption-key-file, --encryption-key-env or --encryption-key-exec)";
  }
  return text;
}

int Fail(const Status& status, const std::string& name) {
  std::cerr << "error: " << (name.empty() ? "" : name + ": ") << ErrorText(status) << "\n";
  return status.IsInvalidArgument() ? 2 : 1;
}

int ParseFlags(const Command& command, cli::FlagSet& flags, const std::vector<std::string>& args,
               std::vector<std::string>* positional) {
  bool help = false;
  flags.Bool("help", 'h', &help, "show this help");
  if (flag_capture) {
    *flag_capture = flags.Describe();
    return 0;
  }
  Status st = flags.Parse(args, positional);
  const std::string name = command.name;
  if (!st.ok()) {
    if (command.kubectl_flag_errors) {
      std::cerr << "error: " << st.message() << "\nSee 'kcache " << name << " --help' for usage.\n";
      return 1;
    }
    std::cerr << "error: " << name << ": " << st.message() << "\n\nFlags:\n" << flags.Usage();
    return 2;
  }
  if (help) {
    std::cout << HelpText(command) << "\nFlags:\n" << flags.Usage();
    return 0;
  }
  return -1;
}

int ParseFlagsOnly(const Command& command, cli::FlagSet& flags,
                   const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  if (int rc = ParseFlags(command, flags, args, &positional); rc >= 0) return rc;
  if (!positional.empty()) {
    return Fail(Status::InvalidArgument("unexpected argument \"" + positional[0] + "\""),
                command.name);
  }
  return -1;
}

namespace {

// What KeyFlags set: one run of the tool reads one key.
struct KeyFlagValues {
  std::string file, env, exec;
  std::optional<StatusOr<std::string>> loaded;
};

KeyFlagValues& GivenKey() {
  static KeyFlagValues values;
  return values;
}

}  // namespace

void KeyFlags(cli::FlagSet& flags) {
  KeyFlagValues& v = GivenKey();
  flags.String("encryption-key-file", '\0', &v.file,
               "a file holding the key-encryption key of encrypted resources (32 bytes, base64)");
  flags.String("encryption-key-env", '\0', &v.env,
               "an environment variable holding the key-encryption key");
  flags.String("encryption-key-exec", '\0', &v.exec,
               "a command (words split on spaces) that prints the key-encryption key, or "
               "{\"key\": \"BASE64\"}");
}

StatusOr<std::string> GivenKeyEncryptionKey() {
  KeyFlagValues& v = GivenKey();
  if (!v.loaded) {
    KeySource source;
    source.file = v.file;
    source.env = v.env;
    for (std::string_view word : Split(v.exec, ' ')) {
      if (!word.empty()) source.exec.emplace_back(word);
    }
    const int given = !source.file.empty() + !source.env.empty() + !source.exec.empty();
    if (given == 0) {
      v.loaded = std::string();
    } else if (given > 1) {
      v.loaded = Status::InvalidArgument(
          "give one of --encryption-key-file, --encryption-key-env and --encryption-key-exec");
    } else {
      v.loaded = LoadKeyEncryptionKey(source);
    }
  }
  return *v.loaded;
}

void SourceFlags(cli::FlagSet& flags, std::string* cache_dir, std::string* snapshot) {
  flags.String("cache", '\0', cache_dir, "the cache directory to read");
  flags.String("snapshot", '\0', snapshot, "the snapshot file to read (instead of --cache)");
  KeyFlags(flags);
}

bool GroupHelp(const Command& group, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "--help" && args[0] != "-h")) return false;
  std::cout << HelpText(group) << "\nRun \"kcache help " << group.name
            << " COMMAND\" for a command's flags.\n";
  return true;
}

}  // namespace kcache::tool
