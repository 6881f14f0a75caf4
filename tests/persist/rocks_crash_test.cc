// SPDX-License-Identifier: Apache-2.0

// Invariant 1 (atomic commit) and invariant 3 (an unfinished relist is
// visible), under SIGKILL: a child process ingests a generated change stream
// into a cache, in commits of 1 to 16 events and with a full relist every
// few hundred events, and is killed at a random moment, many times. After
// every kill the reopened cache must pass Verify (each index entry has its
// object and reverse entry) and, if it reports a resume point R, hold
// exactly the stream's state at R with correct index entries; if it reports
// none, a relist was cut short. The journal, replayed from its window's
// start, must give that same state.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kcache/cache.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

constexpr uint64_t kKeys = 2500;        // relists span three chunks of 1,000
constexpr uint64_t kRelistEvery = 700;  // events between relists
constexpr int kRounds = 30;
// A child ingests at most this many events, so a relist started after a cut
// one can be placed beyond anything the cut child wrote.
constexpr uint64_t kMaxPerRound = 40000;

uint64_t Hash(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Version {
  uint64_t rv;
  std::string app;
};
using State = std::map<std::string, Version>;  // key -> last write

std::string Ns(uint64_t k) { return "ns" + std::to_string(k % 5); }
std::string Name(uint64_t k) { return "pod-" + std::to_string(k); }

// Event e (1-based) of the stream: a delete (one in five) or a write.
void Apply(uint64_t e, State* s) {
  uint64_t h = Hash(e), k = h % kKeys;
  std::string key = Ns(k) + "/" + Name(k);
  if ((h >> 20) % 5 == 0) {
    s->erase(key);
  } else {
    (*s)[key] = Version{e, "app" + std::to_string((h >> 32) % 7)};
  }
}

// The stream's state after event e, computed incrementally: calls come with
// growing e (rebuilt from scratch otherwise).
class Stream {
 public:
  const State& At(uint64_t e) {
    if (e < at_) {
      state_.clear();
      at_ = 0;
    }
    for (; at_ < e;) Apply(++at_, &state_);
    return state_;
  }

 private:
  State state_;
  uint64_t at_ = 0;
};

ObjectPtr PodOf(const std::string& key, const Version& v) {
  size_t slash = key.find('/');
  return Pod(key.substr(slash + 1), key.substr(0, slash), std::to_string(v.rv),
             {{"app", v.app}, {"gen", std::to_string(v.rv % 5)}});
}

// Reports a failure in the child and ends it with exit code 3.
[[noreturn]] void Die(const Status& st) {
  std::fprintf(stderr, "crash test child: %s\n", st.ToString().c_str());
  _exit(3);
}

// The child: resume from the checkpoint (or relist at a fresh point), say so
// on `started`, and ingest until killed.
[[noreturn]] void Ingest(const std::string& dir, uint64_t fresh_point, int started) {
  Stream stream;
  auto cache = Cache::Open(dir);
  if (!cache.ok()) Die(cache.status());
  auto store = (*cache)->OpenKeyspace("pods");
  if (!store.ok()) Die(store.status());
  std::string rv = (*store)->LastSyncResourceVersion();
  uint64_t e = rv.empty() ? fresh_point : std::stoull(rv);
  const uint64_t stop = e + kMaxPerRound;
  State state = stream.At(e);
  auto relist = [&] {
    std::vector<ObjectPtr> all;
    for (const auto& [key, v] : state) all.push_back(PodOf(key, v));
    if (auto r = (*store)->Replace(std::move(all), std::to_string(e)); !r.ok()) Die(r.status());
  };
  if (rv.empty()) relist();
  // The random kill is timed from here, so that a slow start (a relist under
  // a sanitizer) does not swallow most of the rounds.
  if (write(started, "s", 1) != 1) _exit(3);
  while (true) {
    if (e >= stop) pause();  // wait to be killed
    uint64_t n = 1 + Hash(e * 31 + 7) % 16;
    Transaction txn;
    for (uint64_t i = 0; i < n; ++i) {
      ++e;
      uint64_t h = Hash(e), k = h % kKeys;
      std::string key = Ns(k) + "/" + Name(k);
      Apply(e, &state);
      if (auto it = state.find(key); it != state.end()) {
        txn.Update(PodOf(key, it->second));
      } else {  // as a watch reports a deletion: the object at its rv
        txn.Delete(PodOf(key, Version{e, "gone"}));
      }
    }
    txn.resource_version = std::to_string(e);
    if (Status st = (*store)->Commit(txn, nullptr); !st.ok()) Die(st);
    if (e % kRelistEvery < n) relist();
  }
}

// Forks a child that runs `body` with the write end of a pipe (and exits
// with code 3 if `body` returns); returns its pid (-1 on failure) and the
// read end in *from_child.
pid_t Spawn(const std::function<void(int)>& body, int* from_child) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    body(fds[1]);
    _exit(3);
  }
  close(fds[1]);
  *from_child = fds[0];
  return child;
}

// SIGKILLs `child`, then reopens the cache at `dir`, which must pass Verify.
void KillThenReopen(pid_t child, const std::string& dir, int round, std::shared_ptr<Cache>* out) {
  kill(child, SIGKILL);
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  ASSERT_TRUE(WIFSIGNALED(wstatus))
      << "the child stopped by itself, exit code " << WEXITSTATUS(wstatus);
  auto cache = Cache::Open(dir);
  ASSERT_OK(cache) << "round " << round << ": " << cache.status();
  Status verified = (*cache)->Verify();
  ASSERT_OK(verified) << "round " << round << ": " << verified;
  *out = *std::move(cache);
}

TEST(RocksCrashTest, SigkillAtRandomPointsKeepsCommitsAtomic) {
  TempDir dir;
  std::mt19937_64 rng(20261122);
  uint64_t last_rv = 0, fresh = 1000;
  Stream stream, journal_stream;
  int exact = 0, cut_relists = 0, replayed = 0;
  for (int round = 0; round < kRounds; ++round) {
    int started;
    pid_t child = Spawn([&](int to_parent) { Ingest(dir.path(), fresh, to_parent); }, &started);
    ASSERT_GE(child, 0);
    char byte;
    bool running = read(started, &byte, 1) == 1;  // 0: the child died first
    close(started);
    // Whatever this child writes lies below the next fresh point.
    fresh = std::max(fresh, last_rv) + kMaxPerRound + 16;
    if (running) usleep(static_cast<useconds_t>(5000 + rng() % 200000));
    std::shared_ptr<Cache> cache;
    ASSERT_NO_FATAL_FAILURE(KillThenReopen(child, dir.path(), round, &cache));
    auto store = cache->OpenKeyspace("pods");
    ASSERT_OK(store) << store.status();
    const Indexer& s = **store;

    // Every object is indexed under its own namespace and labels.
    auto keys = s.ListKeys();
    ASSERT_OK(keys);
    ASSERT_EQ(*s.Size(), keys->size());
    for (const std::string& ns : *s.ListIndexFuncValues(kNamespaceIndex)) {
      for (const ObjectPtr& o : *s.ByIndex(kNamespaceIndex, ns)) ASSERT_EQ(o->namespace_(), ns);
    }
    for (const std::string& label : *s.ListIndexFuncValues(kLabelIndex)) {
      size_t eq = label.find('=');
      for (const ObjectPtr& o : *s.ByIndex(kLabelIndex, label)) {
        ASSERT_EQ(o->labels().at(label.substr(0, eq)), label.substr(eq + 1));
      }
    }

    std::string rv = s.LastSyncResourceVersion();
    if (rv.empty()) {
      ++cut_relists;  // killed inside a relist: the next start relists
      continue;
    }
    uint64_t r = std::stoull(rv);
    EXPECT_GE(r, last_rv) << "round " << round;
    last_rv = r;
    const State& want = stream.At(r);
    ASSERT_EQ(keys->size(), want.size()) << "round " << round << " at " << r;
    auto it = want.begin();
    for (const std::string& key : *keys) {
      ASSERT_EQ(key, it->first) << "round " << round << " at " << r;
      ObjectPtr o = *s.GetByKey(key);
      ASSERT_EQ(o->resource_version(), std::to_string(it->second.rv)) << key;
      ASSERT_EQ(o->labels().at("app"), it->second.app) << key;
      ++it;
    }
    // The journal commits with the objects: replayed from the start of its
    // window, it gives the state at the resume point.
    auto stats = cache->Stats("pods");
    ASSERT_OK(stats);
    uint64_t start = std::stoull(stats->journal.start);
    ASSERT_LE(start, r) << "round " << round;
    State replay = journal_stream.At(start);
    std::string at = stats->journal.start;
    bool more = true;
    while (more) {
      auto read = cache->ReadJournal("pods", at, 500);
      ASSERT_OK(read) << "round " << round;
      for (const JournalEvent& ev : read->events) {
        if (ev.type == JournalEvent::Type::kDeleted) {
          replay.erase(ev.key);
        } else {
          ASSERT_EQ(ev.object->resource_version(), ev.resource_version);
          replay[ev.key] = Version{std::stoull(ev.resource_version), ev.object->labels().at("app")};
        }
      }
      at = read->resource_version;
      more = read->more;
    }
    ASSERT_EQ(at, rv) << "round " << round;
    ASSERT_EQ(replay.size(), want.size()) << "round " << round;
    for (auto w = want.cbegin(), g = replay.cbegin(); w != want.cend(); ++w, ++g) {
      ASSERT_EQ(g->first, w->first) << "round " << round;
      ASSERT_EQ(g->second.rv, w->second.rv) << g->first;
    }
    if (stats->journal.events > 0) ++replayed;
    ++exact;
  }
  // The test proves something only if the child got work done and some
  // kills landed between commits. (How many land inside a relist depends
  // on scheduling: a child restarted after a cut relist relists first.)
  EXPECT_GT(last_rv, 2000u);
  EXPECT_GE(exact, 5);
  EXPECT_GE(replayed, 3);
  RecordProperty("exact_rounds", exact);
  RecordProperty("journal_replays", replayed);
  RecordProperty("cut_relists", cut_relists);
  RecordProperty("last_resume_point", static_cast<int>(last_rv));
  std::printf(
      "%d rounds: %d exact at their resume point (%d also replayed from the journal), %d cut "
      "inside a relist; last resume point %llu\n",
      kRounds, exact, replayed, cut_relists, static_cast<unsigned long long>(last_rv));
}

// Invariants 1 and 3 under SIGKILL for an initial relist, the largest
// write a sync makes: killed at any moment, the reopened cache passes Verify
// and holds a prefix of the relist (its keys ascend; every chunk whole, with
// its index entries and the count it left) and no resume point; killed after
// Finish, all of it and the resume point. The child's memtables are small,
// so most of the relist is written past the WAL, in one of two ways that
// rounds take in turn: with a change sink, in batches without the WAL,
// flushed tens of times before Finish (what survives is what atomic flushes
// kept); without one, in table files ingested a segment at a time (what
// survives is whole ingestions).
constexpr int kRelistPods = 12000;

std::string PrefixPodName(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "p%05d", i);
  return name;
}

// Pod i of the relists below: 3 KB, labelled app=a0, a1 or a2.
ObjectPtr RelistPod(int i) {
  static const std::string pad(3000, 'x');
  return Pod(PrefixPodName(i), "ns", "7", {{"app", "a" + std::to_string(i % 3)}}, {{"pad", pad}});
}

// A relist child's cache (small memtables: unlogged after the first 512
// KiB) and its "pods" keyspace; ends the child if either cannot be opened.
struct ChildCache {
  std::shared_ptr<Cache> cache;
  std::shared_ptr<Indexer> store;
};
ChildCache OpenChildCache(const std::string& dir) {
  CacheOptions options;
  options.memtable_bytes = size_t{2} << 20;
  auto cache = Cache::Open(dir, options);
  if (!cache.ok()) Die(cache.status());
  auto store = (*cache)->OpenKeyspace("pods");
  if (!store.ok()) Die(store.status());
  return {*cache, *store};
}

// A change sink that drops what it is given, or none.
ChangeSink DroppingSink(bool sink) {
  if (!sink) return nullptr;
  return [](std::vector<StoreChange>) {};
}

[[noreturn]] void InitialRelist(const std::string& dir, int started, bool sink) {
  ChildCache child = OpenChildCache(dir);
  auto session = child.store->BeginReplace(DroppingSink(sink));
  if (!session.ok()) Die(session.status());
  if (write(started, "s", 1) != 1) _exit(3);
  for (int i = 0; i < kRelistPods; ++i) {
    if (Status st = (*session)->Put(RelistPod(i)); !st.ok()) Die(st);
  }
  if (auto done = (*session)->Finish("7"); !done.ok()) Die(done.status());
  if (write(started, "f", 1) != 1) _exit(3);
  pause();  // wait to be killed
  _exit(0);
}

// The child runs in a fresh image of this binary (fork, then exec): a fork
// of a process that has opened RocksDB before inherits a background thread
// pool without its threads, and the flushes that 36 MB of pods need never
// run (writes stall).
constexpr char kChildDir[] = "KCACHE_CRASH_TEST_RELIST_DIR";
constexpr char kChildFd[] = "KCACHE_CRASH_TEST_RELIST_FD";
constexpr char kChildSink[] = "KCACHE_CRASH_TEST_RELIST_SINK";

// Runs `test` of this binary as a child: $`dir_var` names `dir`, $kChildFd
// the pipe to the parent (read end in *from_child), $kChildSink `sink`.
pid_t SpawnTest(const char* test, const char* dir_var, const std::string& dir, bool sink,
                int* from_child) {
  const std::string filter = std::string("--gtest_filter=RocksCrashTest.") + test;
  return Spawn(
      [&](int to_parent) {
        setenv(dir_var, dir.c_str(), 1);
        setenv(kChildFd, std::to_string(to_parent).c_str(), 1);
        setenv(kChildSink, sink ? "1" : "0", 1);
        const int quiet = open("/dev/null", O_WRONLY);
        if (quiet < 0 || dup2(quiet, STDOUT_FILENO) < 0) return;
        execl("/proc/self/exe", "/proc/self/exe", filter.c_str(), static_cast<char*>(nullptr));
      },
      from_child);
}

TEST(RocksCrashTest, SigkillInsideAnInitialRelistKeepsAWholePrefix) {
  if (const char* child_dir = std::getenv(kChildDir)) {
    InitialRelist(child_dir, std::atoi(std::getenv(kChildFd)),
                  std::string_view(std::getenv(kChildSink)) == "1");
  }
  std::mt19937_64 rng(20261126);
  int empty = 0, whole = 0, prefixes[2] = {0, 0};  // by way: ingested, batches
  // The first four rounds run to Finish and time the relist; the other
  // twelve are killed across that time, each in its own twelfth, so that
  // the kills land inside the relist however fast the machine (a sanitizer
  // build is several times slower). Odd rounds give the relist a sink.
  double relist_us = 0;
  constexpr int kTimed = 4, kKilled = 12;
  for (int round = 0; round < kTimed + kKilled; ++round) {
    const bool to_finish = round < kTimed;
    const bool sink = round % 2 == 1;
    TempDir dir;
    int started;
    pid_t child = SpawnTest("SigkillInsideAnInitialRelistKeepsAWholePrefix", kChildDir, dir.path(),
                            sink, &started);
    ASSERT_GE(child, 0);
    char byte;
    bool running = read(started, &byte, 1) == 1;
    if (running && to_finish) {
      const auto start = std::chrono::steady_clock::now();
      ASSERT_EQ(read(started, &byte, 1), 1) << "the relist failed";
      const std::chrono::duration<double, std::micro> took =
          std::chrono::steady_clock::now() - start;
      relist_us = std::max(relist_us, took.count());
    }
    if (running && !to_finish) {
      const double at = std::uniform_real_distribution<double>(0, 1)(rng) + (round - kTimed);
      usleep(static_cast<useconds_t>(at / kKilled * relist_us));
    }
    close(started);
    std::shared_ptr<Cache> cache;
    ASSERT_NO_FATAL_FAILURE(KillThenReopen(child, dir.path(), round, &cache));
    auto store = cache->OpenKeyspace("pods");
    ASSERT_OK(store) << store.status();
    auto keys = (*store)->ListKeys();
    ASSERT_OK(keys);
    ASSERT_EQ(*(*store)->Size(), keys->size()) << "round " << round;
    for (size_t i = 0; i < keys->size(); ++i) {
      ASSERT_EQ((*keys)[i], "ns/" + PrefixPodName(static_cast<int>(i))) << "round " << round;
    }
    size_t labelled = 0;
    for (const char* app : {"app=a0", "app=a1", "app=a2"}) {
      auto found = (*store)->IndexKeys(kLabelIndex, app);
      ASSERT_OK(found);
      labelled += found->size();
    }
    EXPECT_EQ(labelled, keys->size()) << "round " << round;
    if ((*store)->LastSyncResourceVersion() == "7") {
      EXPECT_EQ(keys->size(), static_cast<size_t>(kRelistPods)) << "round " << round;
      ++whole;
    } else {
      EXPECT_EQ((*store)->LastSyncResourceVersion(), "") << "round " << round;
      ++(keys->empty() ? empty : prefixes[sink]);
    }
  }
  std::printf(
      "%d rounds: %d killed before the first chunk, %d with a prefix of ingested table files, %d "
      "with a prefix of batches, %d after Finish\n",
      kTimed + kKilled, empty, prefixes[0], prefixes[1], whole);
  // Kills must have landed inside the relist after some chunks, either way,
  // and after its end.
  EXPECT_GE(prefixes[0], 1);
  EXPECT_GE(prefixes[1], 1);
  EXPECT_GE(whole, 4);
}

// A relist killed again and again keeps its progress: every page is
// checkpointed (as a paginated LIST does with its continue token), and each
// new child continues from the progress the killed one left. After every
// kill the cache passes Verify, holds every object the progress claims
// (a checkpoint is never committed before its objects), and no resume point
// (invariant 3); the relist ends as one never cut, in far fewer pages than
// starting over would write. Over an empty keyspace (no seen marks: what
// follows the checkpoint is dropped) and over an older list (seen marks:
// what neither child listed is deleted at the end); children with and
// without a change sink take turns (batches, or ingested table files).
constexpr int kPageSize = 500;
constexpr int kPages = kRelistPods / kPageSize;

[[noreturn]] void CheckpointedRelist(const std::string& dir, int to_parent, bool sink) {
  ChildCache child = OpenChildCache(dir);
  Indexer* store = child.store.get();
  ChangeSink changes = DroppingSink(sink);
  auto cut = store->GetCutShortRelist();
  if (!cut.ok()) Die(cut.status());
  int page = 0;
  StatusOr<std::unique_ptr<ReplaceSession>> session = Status::OK();
  if (*cut && !(*cut)->progress.empty()) {
    page = std::atoi((*cut)->progress.c_str());
    session = store->ContinueReplace(std::move(changes));
  } else {
    session = store->BeginReplace(std::move(changes));
  }
  if (!session.ok()) Die(session.status());
  const char first = static_cast<char>(page);
  if (write(to_parent, &first, 1) != 1) _exit(3);
  for (int p = page; p < kPages; ++p) {
    for (int i = p * kPageSize; i < (p + 1) * kPageSize; ++i) {
      if (Status st = (*session)->Put(RelistPod(i)); !st.ok()) Die(st);
    }
    if (p + 1 == kPages) break;
    if (Status st = (*session)->Checkpoint(std::to_string(p + 1)); !st.ok()) Die(st);
  }
  if (auto done = (*session)->Finish("7"); !done.ok()) Die(done.status());
  if (write(to_parent, "f", 1) != 1) _exit(3);
  pause();  // wait to be killed
  _exit(0);
}

constexpr char kContinueDir[] = "KCACHE_CRASH_TEST_CONTINUE_DIR";

TEST(RocksCrashTest, SigkillAgainAndAgainInACheckpointedRelistContinuesIt) {
  if (const char* child_dir = std::getenv(kContinueDir)) {
    CheckpointedRelist(child_dir, std::atoi(std::getenv(kChildFd)),
                       std::string_view(std::getenv(kChildSink)) == "1");
  }
  std::mt19937_64 rng(20261127);
  for (bool over_older : {false, true}) {
    SCOPED_TRACE(over_older ? "over an older list" : "into an empty keyspace");
    TempDir dir;
    if (over_older) {  // 300 keys the relist lacks, and every tenth of its own
      auto cache = Cache::Open(dir.path());
      ASSERT_OK(cache);
      auto store = (*cache)->OpenKeyspace("pods");
      ASSERT_OK(store);
      std::vector<ObjectPtr> older;
      for (int i = 0; i < kRelistPods; i += 10) older.push_back(Pod(PrefixPodName(i), "ns", "3"));
      for (int i = 0; i < 300; ++i) older.push_back(Pod("q" + std::to_string(i), "ns", "3"));
      ASSERT_OK((*store)->Replace(older, "3"));
    }
    std::string target;  // the children's cache
    auto spawn = [&](int round, int* from_child) {
      return SpawnTest("SigkillAgainAndAgainInACheckpointedRelistContinuesIt", kContinueDir, target,
                       round % 2 == 1, from_child);
    };
    // Time a whole relist in a copy, then kill each child a random part
    // of that time after it starts: kills land inside the relist however
    // fast the machine, and each child gets further than the one before.
    double relist_us = 0;
    {
      TempDir copy;
      target = copy.Sub("cache");
      std::filesystem::copy(dir.path(), target, std::filesystem::copy_options::recursive);
      int from_child;
      pid_t child = spawn(0, &from_child);
      ASSERT_GE(child, 0);
      char byte;
      ASSERT_EQ(read(from_child, &byte, 1), 1);
      const auto start = std::chrono::steady_clock::now();
      ASSERT_EQ(read(from_child, &byte, 1), 1) << "the relist failed";
      relist_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
      close(from_child);
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
    target = dir.path();
    int progress = 0, pages_started = 0, continued = 0, round = 0;
    // Pages a child started from (kPages less its first): the whole list
    // each time if nothing were kept.
    bool finished = false;
    for (; round < 40 && !finished; ++round) {
      int from_child;
      pid_t child = spawn(round, &from_child);
      ASSERT_GE(child, 0);
      char first;
      ASSERT_EQ(read(from_child, &first, 1), 1) << "round " << round;
      ASSERT_EQ(first, progress) << "round " << round << ": a child starts where the last left";
      pages_started += kPages - first;
      continued += first > 0;
      usleep(static_cast<useconds_t>(std::uniform_real_distribution<double>(0.1, 0.6)(rng) *
                                     relist_us));
      close(from_child);
      std::shared_ptr<Cache> cache;
      ASSERT_NO_FATAL_FAILURE(KillThenReopen(child, dir.path(), round, &cache));
      auto store = cache->OpenKeyspace("pods");
      ASSERT_OK(store) << store.status();
      if ((*store)->LastSyncResourceVersion() == "7") {
        finished = true;
        break;
      }
      ASSERT_EQ((*store)->LastSyncResourceVersion(), "") << "round " << round;
      auto cut = (*store)->GetCutShortRelist();
      ASSERT_OK(cut);
      ASSERT_TRUE(cut->has_value()) << "round " << round;
      const int now = (*cut)->progress.empty() ? 0 : std::atoi((*cut)->progress.c_str());
      // A child that is cut before its first checkpoint leaves none only
      // if it began afresh: once there is progress, it stays or grows.
      ASSERT_GE(now, progress) << "round " << round;
      progress = now;
      for (int i = 0; i < progress * kPageSize; ++i) {
        auto obj = (*store)->GetByKey("ns/" + PrefixPodName(i));
        ASSERT_OK(obj);
        ASSERT_NE(*obj, nullptr) << "round " << round << ": progress " << progress << " without "
                                 << PrefixPodName(i);
        ASSERT_EQ((*obj)->resource_version(), "7") << "round " << round;
      }
      auto keys = (*store)->ListKeys();
      ASSERT_OK(keys);
      ASSERT_EQ(*(*store)->Size(), keys->size()) << "round " << round;
    }
    ASSERT_TRUE(finished) << "not finished after " << round << " kills";
    auto cache = Cache::Open(dir.path());
    ASSERT_OK(cache);
    auto store = (*cache)->OpenKeyspace("pods");
    ASSERT_OK(store);
    auto keys = (*store)->ListKeys();
    ASSERT_OK(keys);
    ASSERT_EQ(keys->size(), static_cast<size_t>(kRelistPods));
    for (int i = 0; i < kRelistPods; ++i) ASSERT_EQ((*keys)[i], "ns/" + PrefixPodName(i));
    EXPECT_EQ(*(*store)->Size(), static_cast<size_t>(kRelistPods));
    size_t labelled = 0;
    for (const char* app : {"app=a0", "app=a1", "app=a2"}) {
      labelled += (*store)->IndexKeys(kLabelIndex, app)->size();
    }
    EXPECT_EQ(labelled, static_cast<size_t>(kRelistPods));
    auto cut = (*store)->GetCutShortRelist();
    ASSERT_OK(cut);
    EXPECT_FALSE(cut->has_value());
    std::printf(
        "%s: finished after %d kills; its children started %d pages in all (every "
        "kill lands before a whole list's time: starting over, %d and never done)\n",
        over_older ? "over an older list" : "into an empty keyspace", round, pages_started,
        (round + 1) * kPages);
    EXPECT_GE(round, 1) << "no kill landed inside the relist";
    EXPECT_EQ(continued, round) << "every child after a kill continued";
  }
}

}  // namespace
}  // namespace kcache::testing
