// kcache: the command-line tool. main() only parses flags; every command is
// a library function.

#include <iostream>
#include <string>
#include <vector>

#include "bench/decode_bench.h"
#include "bench/store_bench.h"
#include "cli/flags.h"
#include "demo/demo.h"

namespace {

constexpr char kUsage[] = R"(kcache: a persistent, indexed cache of Kubernetes objects

Usage:
  kcache demo [flags]          decode, index and query a built-in synthetic cluster
  kcache bench decode [flags]  metadata extraction against a full JSON parse
  kcache bench store [flags]   ingest and queries of the RocksDB cache against raw RocksDB
  kcache version               print the version

Run "kcache COMMAND --help" for a command's flags.
)";

int Fail(const kcache::Status& st, const std::string& command) {
  std::cerr << "error: " << (command.empty() ? "" : command + ": ") << st.message() << "\n";
  return st.IsInvalidArgument() ? 2 : 1;
}

// Parses `args` with `flags`, handling --help. Returns -1 to go on, else an
// exit code.
int ParseFlags(kcache::cli::FlagSet& flags, const std::vector<std::string>& args,
               const std::string& command, std::vector<std::string>* positional) {
  bool help = false;
  flags.Bool("help", 'h', &help, "show this help");
  kcache::Status st = flags.Parse(args, positional);
  if (!st.ok()) {
    std::cerr << "error: " << command << ": " << st.message() << "\n\nFlags:\n" << flags.Usage();
    return 2;
  }
  if (help) {
    std::cout << "Usage: kcache " << command << " [flags]\n\nFlags:\n" << flags.Usage();
    return 0;
  }
  return -1;
}

int Demo(const std::vector<std::string>& args) {
  int64_t pods = 20000, namespaces = 10;
  kcache::cli::FlagSet flags;
  flags.Int("pods", '\0', &pods, "pods in the synthetic cluster");
  flags.Int("namespaces", '\0', &namespaces, "namespaces they are spread over");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "demo", &positional); rc >= 0) return rc;
  if (!positional.empty()) return Fail(kcache::Status::InvalidArgument("unexpected argument \"" + positional[0] + "\""), "demo");
  kcache::Status st = kcache::demo::RunDemo(
      {.pods = static_cast<int>(pods), .namespaces = static_cast<int>(namespaces)}, std::cout);
  return st.ok() ? 0 : Fail(st, "demo");
}

int BenchStore(const std::vector<std::string>& args) {
  int64_t objects = 100000, batch = 1000, runs = 5, dict = 0;
  std::string dir;
  bool label_index = true;
  kcache::cli::FlagSet flags;
  flags.Int("objects", '\0', &objects, "pods loaded");
  flags.Bool("label-index", '\0', &label_index, "maintain the label index");
  flags.Int("batch", '\0', &batch, "objects per commit");
  flags.Int("runs", '\0', &runs, "timed runs per query (the median is reported)");
  flags.Int("zstd-dict-bytes", '\0', &dict, "zstd dictionary size for objects (0: none)");
  flags.String("dir", '\0', &dir, "directory for the databases (default: a new one under /tmp, removed after)");
  std::vector<std::string> positional;
  if (int rc = ParseFlags(flags, args, "bench store", &positional); rc >= 0) return rc;
  kcache::Status st = kcache::bench::RunStoreBench(
      {.objects = static_cast<int>(objects), .batch = static_cast<int>(batch),
       .runs = static_cast<int>(runs), .zstd_dictionary_bytes = static_cast<int>(dict),
       .label_index = label_index, .dir = dir},
      std::cout);
  return st.ok() ? 0 : Fail(st, "bench store");
}

int Bench(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "store") return BenchStore({args.begin() + 1, args.end()});
  if (args.empty() || args[0] != "decode") {
    return Fail(kcache::Status::InvalidArgument(
                    args.empty() ? "missing benchmark name (available: decode, store)"
                                 : "unknown benchmark \"" + args[0] + "\" (available: decode, store)"),
                "bench");
  }
  int64_t objects = 20000, runs = 5;
  kcache::cli::FlagSet flags;
  flags.Int("objects", '\0', &objects, "distinct pods decoded per run");
  flags.Int("runs", '\0', &runs, "timed runs per method (the median is reported)");
  std::vector<std::string> positional;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (int rc = ParseFlags(flags, rest, "bench decode", &positional); rc >= 0) return rc;
  kcache::Status st = kcache::bench::RunDecodeBench(
      {.objects = static_cast<int>(objects), .runs = static_cast<int>(runs)}, std::cout);
  return st.ok() ? 0 : Fail(st, "bench decode");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "demo") return Demo(args);
  if (command == "bench") return Bench(args);
  if (command == "version") {
    std::cout << "kcache " << KCACHE_VERSION << "\n";
    return 0;
  }
  std::cerr << "error: unknown command \"" << command << "\"\n\n" << kUsage;
  return 2;
}
