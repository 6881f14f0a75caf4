#include "tools/kcache/command.h"

#include <iostream>

namespace kcache::tool {

std::string HelpText(const Command& c) {
  return std::string(c.about) + "\n\nUsage:\n  kcache " + c.usage + "\n\nExamples:\n" + c.examples;
}

int Fail(const Status& status, const std::string& name) {
  std::cerr << "error: " << (name.empty() ? "" : name + ": ") << status.message() << "\n";
  return status.IsInvalidArgument() ? 2 : 1;
}

int ParseFlags(const Command& command, cli::FlagSet& flags, const std::vector<std::string>& args,
               std::vector<std::string>* positional) {
  bool help = false;
  flags.Bool("help", 'h', &help, "show this help");
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

void SourceFlags(cli::FlagSet& flags, std::string* cache_dir, std::string* snapshot) {
  flags.String("cache", '\0', cache_dir, "the cache directory to read");
  flags.String("snapshot", '\0', snapshot, "the snapshot file to read (instead of --cache)");
}

bool GroupHelp(const Command& group, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "--help" && args[0] != "-h")) return false;
  std::cout << HelpText(group) << "\nRun \"kcache help " << group.name
            << " COMMAND\" for a command's flags.\n";
  return true;
}

}  // namespace kcache::tool
