// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/bench/get_bench.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "kcache/cache.h"
#include "kcache/store.h"
#include "tools/kcache/bench/timing.h"
#include "tools/kcache/scratch_dir.h"
#include "tools/kcache/testcluster/pods.h"

extern char** environ;

namespace kcache::bench {
namespace {

namespace fs = std::filesystem;
struct Usage {
  double seconds;
  double peak_rss_bytes;
};

// Runs `argv` with standard output to /dev/null; its time and peak RSS.
// The child reports its own peak (VmHWM) to `peak_file`: its rusage would
// count this process's peak too, which a child inherits when it is started.
StatusOr<Usage> Measure(const std::vector<std::string>& argv, const std::string& peak_file) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = {"KCACHE_BENCH_PEAK_RSS_FILE=" + peak_file};
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> env;
  for (std::string& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  fs::remove(peak_file);
  pid_t pid;
  auto start = Clock::now();
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status::Internal("bench: cannot start " + argv[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return Status::Internal("bench: waitpid failed");
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Status::Internal("bench: " + cmd + " failed");
  std::ifstream in(peak_file);
  std::string key;
  double kb = 0;
  if (!(in >> key >> kb) || key != "VmHWM:")
    return Status::Internal("bench: " + cmd + " reported no peak memory");
  return Usage{secs, kb * 1024};
}

}  // namespace

Status RunGetBench(const GetBenchOptions& o, std::ostream& out) {
  if (o.sizes.empty() || o.runs <= 0 || !std::is_sorted(o.sizes.begin(), o.sizes.end()) ||
      o.sizes.front() <= 0) {
    return Status::InvalidArgument(
        "--objects wants ascending positive sizes, --runs a positive count");
  }
  KCACHE_ASSIGN_OR_RETURN(std::unique_ptr<tool::ScratchDir> work,
                          tool::ScratchDir::Create("kcache-bench", o.dir));
  const std::string cache_dir = work->path() + "/cache";
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  struct Form {
    const char* name;
    std::vector<std::string> args;
    int max_size;  // --sort-by holds every object: ~9 GB at 1M pods
  };
  constexpr int kAll = std::numeric_limits<int>::max();
  const std::vector<Form> forms = {
      {"-A -o name", {"-A", "-o", "name"}, kAll},
      {"-A -o json", {"-A", "-o", "json"}, kAll},
      {"-A -o yaml", {"-A", "-o", "yaml"}, kAll},
      {"-A (table)", {"-A"}, kAll},
      {"-A -o custom-columns",
       {"-A", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName"},
       kAll},
      {"-A --sort-by (holds all)", {"-A", "--sort-by", ".metadata.name", "-o", "name"}, 100000},
  };
  char line[512];
  std::snprintf(line, sizeof(line), "%-26s %10s %10s %12s %14s\n", "kcache get pods", "pods",
                "seconds", "peak RSS", "pods/s");
  out << line;
  std::vector<std::vector<double>> rss(forms.size());
  int loaded = 0;
  serve::synth::PodOptions po{.seed = 7, .namespaces = 10};
  for (int size : o.sizes) {
    {
      // Pods in commits of 1,000, as a sync writes them.
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Cache> cache, Cache::Open(cache_dir));
      KCACHE_ASSIGN_OR_RETURN(std::shared_ptr<Indexer> pods, cache->OpenKeyspace("pods"));
      ResourceInfo info;
      info.version = "v1";
      info.resource = "pods";
      info.kind = "Pod";
      KCACHE_RETURN_IF_ERROR(cache->SetResourceInfo("pods", info));
      for (; loaded < size; loaded += 1000) {
        Transaction txn;
        for (int i = loaded; i < std::min(size, loaded + 1000); ++i) {
          KCACHE_ASSIGN_OR_RETURN(ObjectPtr obj,
                                  Object::Parse(serve::synth::PodJson(po, i, 1000 + i)));
          txn.Add(std::move(obj));
        }
        KCACHE_RETURN_IF_ERROR(pods->Commit(txn, nullptr));
      }
      loaded = size;
      KCACHE_RETURN_IF_ERROR(cache->Compact());
    }
    for (size_t f = 0; f < forms.size(); ++f) {
      if (size > forms[f].max_size) continue;
      std::vector<std::string> argv = {self, "get", "pods", "--cache", cache_dir};
      argv.insert(argv.end(), forms[f].args.begin(), forms[f].args.end());
      std::vector<double> secs, peak;
      for (int run = 0; run < o.runs; ++run) {
        KCACHE_ASSIGN_OR_RETURN(Usage u, Measure(argv, work->path() + "/peak"));
        secs.push_back(u.seconds);
        peak.push_back(u.peak_rss_bytes);
      }
      rss[f].push_back(Median(peak));
      std::snprintf(line, sizeof(line), "%-26s %10d %10.2f %9.0f MB %14.0f\n", forms[f].name, size,
                    Median(secs), Median(peak) / 1e6, size / Median(secs));
      out << line << std::flush;
    }
  }
  out << "\npeak RSS at " << o.sizes.back() << " pods / at " << o.sizes.front()
      << " pods (medians of " << o.runs << " runs):\n";
  for (size_t f = 0; f < forms.size(); ++f) {
    if (rss[f].size() < o.sizes.size()) continue;
    std::snprintf(line, sizeof(line), "  %-26s %6.2fx\n", forms[f].name,
                  rss[f].back() / rss[f].front());
    out << line;
  }
  return Status::OK();
}

}  // namespace kcache::bench
