// SPDX-License-Identifier: Apache-2.0

// kcache: the command-line tool. main() finds the command's row in the
// table below and runs it; each command keeps its flags, help and run in
// its own file (command.h).

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tools/kcache/command.h"
#include "tools/kcache/completion.h"

namespace kcache::tool {

const std::vector<const Command*>& Commands() {
  static const std::vector<const Command*> table = [] {
    std::vector<const Command*> t = {&kDemoCommand, &kBenchCommand};
    for (const Command& c : kBenchCommands) t.push_back(&c);
    for (const Command* c : {&kServeCommand, &kSyncCommand, &kGetCommand, &kStatsCommand,
                             &kTreeCommand, &kDiffCommand, &kSnapshotCommand}) {
      t.push_back(c);
    }
    for (const Command& c : kSnapshotCommands) t.push_back(&c);
    for (const Command* c : {&kRekeyCommand, &kCompletionCommand, &kVersionCommand}) {
      t.push_back(c);
    }
    return t;
  }();
  return table;
}

const Command* FindCommand(const std::string& name) {
  for (const Command* c : Commands()) {
    if (name == c->name) return c;
  }
  return nullptr;
}

namespace {

std::string Usage() {
  std::string out = "kcache: a persistent, indexed cache of Kubernetes objects\n\nCommands:\n";
  for (const Command* c : Commands()) {
    out += "  kcache " + std::string(c->usage) + "\n      " + c->summary + "\n";
  }
  return out +
         "\nRun \"kcache help COMMAND\" (or \"kcache COMMAND --help\") for a command's "
         "arguments,\nexamples and flags.\n";
}

// kcache bench get measures its children's peak memory this way: a child
// started by a large process inherits that process's peak in its rusage.
void ReportPeakRss() {
  const char* path = std::getenv("KCACHE_BENCH_PEAK_RSS_FILE");
  if (!path || !*path) return;
  std::ifstream status("/proc/self/status");
  std::ofstream out(path);
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) out << line << "\n";
  }
}

int Run(std::vector<std::string> args) {
  if (args.size() >= 2 && args[0] == "help") {
    // kcache help COMMAND [VERB]: the same as COMMAND [VERB] --help.
    args.erase(args.begin());
    std::string name = args[0];
    if (args.size() >= 2) name += " " + args[1];
    if (!FindCommand(name)) {
      std::cerr << "error: help: unknown command \"" << name << "\"\n\n" << Usage();
      return 2;
    }
    args.push_back("--help");
  }
  if (!args.empty() && args[0] == kCompleteCommand) {
    return Complete({args.begin() + 1, args.end()}, std::cout);
  }
  if (!args.empty() && args[0] == "--version") args[0] = "version";  // as kubectl's is
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << Usage();
    return args.empty() ? 2 : 0;
  }
  // A group's verb ("snapshot export") before the group itself.
  if (args.size() >= 2) {
    if (const Command* c = FindCommand(args[0] + " " + args[1])) {
      return c->run(*c, {args.begin() + 2, args.end()});
    }
  }
  if (const Command* c = FindCommand(args[0])) return c->run(*c, {args.begin() + 1, args.end()});
  std::cerr << "error: unknown command \"" << args[0] << "\"\n\n" << Usage();
  return 2;
}

}  // namespace
}  // namespace kcache::tool

int main(int argc, char** argv) {
  int rc = kcache::tool::Run(std::vector<std::string>(argv + 1, argv + argc));
  kcache::tool::ReportPeakRss();
  return rc;
}
