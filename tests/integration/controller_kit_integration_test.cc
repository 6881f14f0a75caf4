// SPDX-License-Identifier: Apache-2.0

// The controller kit against the real kube-apiserver. Leader election: of
// two candidate processes one leads, and when it is SIGKILLed the other
// takes over within the lease duration; a leader cut off from the server
// (its connection a black hole) stops leading before the other candidate
// starts; a leader that stops with release_on_cancel hands over at once.
// The event recorder: repeats become a count, similar events are combined.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <iostream>
#include <list>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "integration/cluster.h"
#include "kcache/event_recorder.h"
#include "kcache/leader_election.h"
#include "testing/command.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::Cluster;
using testing::RunCommand;

constexpr milliseconds kLease(3000), kRenew(2000), kRetry(500);

// Polls `done` every 5 ms until it holds or `timeout` passes; the times
// measured here are then within 5 ms.
bool WaitFor(const std::function<bool()>& done, milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = Steady::now() + timeout;
  while (Steady::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return done();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A TCP forwarder to the API server that can turn into a black hole: it then
// keeps accepting and reading, and forwards nothing either way, so that
// requests through it hang until their client's timeout (a partition, not a
// refusal).
class Proxy {
 public:
  Proxy(std::string host, int port) : host_(std::move(host)), port_(port) {
    listen_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(listen_, 16);
    socklen_t len = sizeof a;
    getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    local_port_ = ntohs(a.sin_port);
    accepter_ = std::jthread([this](std::stop_token stop) { Accept(stop); });
  }
  ~Proxy() {
    accepter_.request_stop();
    accepter_.join();
    std::lock_guard l(mu_);
    for (auto& t : pumps_) t.request_stop();
    pumps_.clear();  // joins
    close(listen_);
  }
  int port() const { return local_port_; }
  void BlackHole() { black_hole_ = true; }

 private:
  void Accept(std::stop_token stop) {
    while (!stop.stop_requested()) {
      pollfd p{listen_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int client = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port_));
      inet_pton(AF_INET, host_.c_str(), &a.sin_addr);
      if (connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(client);
        close(server);
        continue;
      }
      std::lock_guard l(mu_);
      pumps_.emplace_back([this, client, server](std::stop_token s) { Pump(s, client, server); });
    }
  }

  void Pump(std::stop_token stop, int a, int b) {
    char buf[65536];
    while (!stop.stop_requested()) {
      pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (poll(p, 2, 100) <= 0) continue;
      bool closed = false;
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(p[i].fd, buf, sizeof buf);
        if (n <= 0) {
          closed = true;
          break;
        }
        if (black_hole_) continue;  // read and dropped
        const int to = i == 0 ? b : a;
        for (ssize_t sent = 0; sent < n;) {
          ssize_t w = write(to, buf + sent, static_cast<size_t>(n - sent));
          if (w <= 0) break;
          sent += w;
        }
      }
      if (closed && !black_hole_) break;
    }
    close(a);
    close(b);
  }

  const std::string host_;
  const int port_;
  int listen_ = -1;
  int local_port_ = 0;
  std::atomic<bool> black_hole_{false};
  std::mutex mu_;
  std::list<std::jthread> pumps_;  // guarded by mu_
  std::jthread accepter_;
};

// One in-process candidate: when it started and stopped leading.
struct Candidate {
  std::mutex mu;
  std::optional<Steady::time_point> started, stopped;
  std::shared_ptr<LeaderElector> elector;
  std::jthread runner;

  Status Start(const RestConfig& config, const std::string& lease, const std::string& id,
               bool release, milliseconds lease_duration = kLease,
               milliseconds renew_deadline = kRenew) {
    LeaderElectionConfig e;
    e.lease_namespace = "default";
    e.lease_name = lease;
    e.identity = id;
    e.lease_duration = lease_duration;
    e.renew_deadline = renew_deadline;
    e.retry_period = kRetry;
    e.release_on_cancel = release;
    e.callbacks.on_started_leading = [this](std::stop_token leading) {
      {
        std::lock_guard l(mu);
        started = Steady::now();
      }
      // Acts until told to stop: the instant it is told is when it stops.
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock l(m);
      cv.wait(l, leading, [] { return false; });
      std::lock_guard g(mu);
      stopped = Steady::now();
    };
    KCACHE_ASSIGN_OR_RETURN(elector, LeaderElector::Create(config, std::move(e)));
    runner = std::jthread([this](std::stop_token stop) { elector->Run(stop); });
    return Status::OK();
  }
  std::optional<Steady::time_point> Started() {
    std::lock_guard l(mu);
    return started;
  }
  std::optional<Steady::time_point> Stopped() {
    std::lock_guard l(mu);
    return stopped;
  }
};

TEST(LeaderElectionIntegrationTest, OfTwoProcessesOneLeadsAndTheOtherTakesOverAfterASigkill) {
  const char* bin = std::getenv("KCACHE_LEADER_PEER_BIN");
  ASSERT_NE(bin, nullptr) << "KCACHE_LEADER_PEER_BIN is not set";
  testing::TempDir dir;
  const std::string lease = "kill-" + std::to_string(getpid());
  auto start = [&](const std::string& id) {
    RunCommand("(" + std::string(bin) + " " + Cluster::Get().File("kubeconfig") + " default " +
               lease + " " + id + " " + std::to_string(kLease.count()) + " " +
               std::to_string(kRenew.count()) + " " + std::to_string(kRetry.count()) + " >" +
               dir.Sub(id + ".log") + " 2>&1 & echo $! >" + dir.Sub(id + ".pid") + ")");
  };
  start("one");
  ASSERT_TRUE(WaitFor([&] {
    return Slurp(dir.Sub("one.log")).find("leading one") != std::string::npos;
  })) << Slurp(dir.Sub("one.log"));
  start("two");
  // While one holds the lease, two waits (several of its retry periods).
  std::this_thread::sleep_for(kLease);
  EXPECT_EQ(Slurp(dir.Sub("two.log")).find("leading"), std::string::npos)
      << Slurp(dir.Sub("two.log"));
  const auto killed = Steady::now();
  RunCommand("kill -9 $(cat " + dir.Sub("one.pid") + ")");
  ASSERT_TRUE(
      WaitFor([&] { return Slurp(dir.Sub("two.log")).find("leading two") != std::string::npos; },
              std::chrono::seconds(30)))
      << Slurp(dir.Sub("two.log"));
  const auto took = Steady::now() - killed;
  std::cout << "after the SIGKILL: two leads at "
            << std::chrono::duration_cast<milliseconds>(took).count() << " ms\n";
  // The lease duration from two's last sight of a renewal, and a few retry
  // periods of polling (slack for a loaded machine).
  EXPECT_LT(took, kLease + 6 * kRetry);
  RunCommand("kill $(cat " + dir.Sub("two.pid") + ")");
  ASSERT_TRUE(
      WaitFor([&] { return Slurp(dir.Sub("two.log")).find("stopped two") != std::string::npos; }));
}

TEST(LeaderElectionIntegrationTest, APartitionedLeaderStopsBeforeTheOtherStarts) {
  const RestConfig direct = Cluster::Get().AdminConfig();
  const std::string server = direct.server;  // https://127.0.0.1:PORT
  const int port = std::atoi(server.substr(server.rfind(':') + 1).c_str());
  Proxy proxy("127.0.0.1", port);
  RestConfig through = direct;
  through.server = "https://127.0.0.1:" + std::to_string(proxy.port());
  const std::string lease = "partition-" + std::to_string(getpid());
  Candidate a, b;
  ASSERT_OK(a.Start(through, lease, "a", false));
  ASSERT_TRUE(WaitFor([&] { return a.Started().has_value(); }));
  ASSERT_OK(b.Start(direct, lease, "b", false));
  std::this_thread::sleep_for(kLease);
  ASSERT_FALSE(b.Started().has_value());
  EXPECT_EQ(b.elector->GetLeader(), "a");
  const auto cut = Steady::now();
  proxy.BlackHole();
  ASSERT_TRUE(WaitFor([&] { return b.Started().has_value(); }, std::chrono::seconds(30)));
  ASSERT_TRUE(a.Stopped().has_value()) << "the cut-off leader never stopped";
  auto ms = [&](Steady::time_point t) {
    return std::chrono::duration_cast<milliseconds>(t - cut).count();
  };
  std::cout << "after the cut: a stopped at " << ms(*a.Stopped()) << " ms, b started at "
            << ms(*b.Started()) << " ms\n";
  // The safety property: a stopped acting before b started.
  EXPECT_LT(*a.Stopped(), *b.Started());
  EXPECT_LT(*a.Stopped() - cut, kRenew + 4 * kRetry);
  EXPECT_FALSE(a.elector->IsLeader());
  EXPECT_TRUE(b.elector->IsLeader());
  b.runner.request_stop();
  a.runner.request_stop();
}

TEST(LeaderElectionIntegrationTest, ALeaderThatStopsWithReleaseOnCancelHandsOverAtOnce) {
  const RestConfig config = Cluster::Get().AdminConfig();
  const std::string lease = "release-" + std::to_string(getpid());
  // A long lease, so that a hand-over that waited it out is told apart.
  constexpr milliseconds kLongLease(10000), kLongRenew(6000);
  Candidate a, b;
  ASSERT_OK(a.Start(config, lease, "a", true, kLongLease, kLongRenew));
  ASSERT_TRUE(WaitFor([&] { return a.Started().has_value(); }));
  ASSERT_OK(b.Start(config, lease, "b", false, kLongLease, kLongRenew));
  std::this_thread::sleep_for(kRetry * 3);
  ASSERT_FALSE(b.Started().has_value());
  const auto stopped = Steady::now();
  a.runner.request_stop();
  a.runner.join();
  ASSERT_TRUE(a.Stopped().has_value());
  ASSERT_TRUE(WaitFor([&] { return b.Started().has_value(); }));
  // Released: no waiting out the lease (10 s), only b's retry period and
  // the one-second duration a released lease keeps (with slack).
  EXPECT_LT(*b.Started() - stopped, milliseconds(1000) + 8 * kRetry);
  b.runner.request_stop();
}

TEST(LeaderElectionIntegrationTest, BadConfigurationsAreRefusedNamingTheField) {
  LeaderElectionConfig e;
  e.lease_namespace = "default";
  e.lease_name = "x";
  e.identity = "me";
  e.callbacks.on_started_leading = [](std::stop_token) {};
  EXPECT_OK(LeaderElector::Create(Cluster::Get().AdminConfig(), e));
  LeaderElectionConfig bad = e;
  bad.identity = "";
  EXPECT_THAT(std::string(LeaderElector::Create({}, bad).status().message()),
              ::testing::HasSubstr("identity"));
  bad = e;
  bad.renew_deadline = bad.lease_duration;
  EXPECT_THAT(std::string(LeaderElector::Create({}, bad).status().message()),
              ::testing::HasSubstr("lease_duration must be greater"));
  bad = e;
  bad.retry_period = bad.renew_deadline;
  EXPECT_TRUE(LeaderElector::Create({}, bad).status().IsInvalidArgument());
  bad = e;
  bad.callbacks.on_started_leading = nullptr;
  EXPECT_TRUE(LeaderElector::Create({}, bad).status().IsInvalidArgument());
}

// The events of `name` in `ns`, as the server lists them.
std::vector<nlohmann::json> EventsOf(const std::string& ns, const std::string& name) {
  ListOptions o;
  o.field_selector = "involvedObject.name=" + name;
  auto list = Cluster::Get().Admin()->List(ResourceRef{{"", "v1", "events"}, true, ns}, o);
  EXPECT_OK(list) << list.status();
  std::vector<nlohmann::json> out;
  if (!list.ok()) return out;
  for (const ObjectPtr& e : list->items) out.push_back(nlohmann::json::parse(e->json()));
  return out;
}

TEST(EventRecorderIntegrationTest, RepeatsAreCountedAndSimilarEventsCombined) {
  const std::string ns = Cluster::Get().Namespace("events");
  auto admin = Cluster::Get().Admin();
  auto cm =
      admin->Create(ResourceRef{{"", "v1", "configmaps"}, true, ns},
                    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"subject"}})");
  ASSERT_OK(cm) << cm.status();
  auto recorder = EventRecorder::Create(Cluster::Get().AdminConfig(),
                                        {.component = "kcache-test", .host = "here"});
  ASSERT_OK(recorder) << recorder.status();
  for (int i = 0; i < 5; ++i) {
    (*recorder)->Event(**cm, EventType::kNormal, "Synced", "made what it should be");
  }
  ASSERT_TRUE((*recorder)->Flush(std::chrono::seconds(30)));
  std::vector<nlohmann::json> events = EventsOf(ns, "subject");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 5);
  EXPECT_EQ(events[0]["type"], "Normal");
  EXPECT_EQ(events[0]["reason"], "Synced");
  EXPECT_EQ(events[0]["source"]["component"], "kcache-test");
  EXPECT_EQ(events[0]["involvedObject"]["kind"], "ConfigMap");
  EXPECT_EQ(events[0]["involvedObject"]["uid"], (*cm)->meta().uid);
  // kubectl describe shows it, as a controller's users would look for it.
  auto described = RunCommand("kubectl --kubeconfig " + Cluster::Get().File("kubeconfig") +
                              " describe configmap subject -n " + ns + " 2>&1");
  EXPECT_THAT(described.output, ::testing::HasSubstr("made what it should be"));

  // Twelve warnings of one reason with distinct messages: the tenth and
  // later are combined into one event (client-go's EventAggregator).
  for (int i = 0; i < 12; ++i) {
    (*recorder)->Event(**cm, EventType::kWarning, "Failed", "attempt " + std::to_string(i));
  }
  ASSERT_TRUE((*recorder)->Flush(std::chrono::seconds(30)));
  int warnings = 0, combined = 0;
  for (const nlohmann::json& e : EventsOf(ns, "subject")) {
    if (e["type"] != "Warning") continue;
    ++warnings;
    const std::string message = e["message"];
    if (message.rfind("(combined from similar events): ", 0) == 0) {
      ++combined;
      EXPECT_EQ(e["count"], 3) << message;  // attempts 9, 10 and 11
      EXPECT_EQ(message, "(combined from similar events): attempt 11");
    }
  }
  EXPECT_EQ(warnings, 10);
  EXPECT_EQ(combined, 1);
  const EventRecorderStats stats = (*recorder)->stats();
  EXPECT_EQ(stats.created, 11u);
  EXPECT_EQ(stats.updated, 6u);
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_TRUE(EventRecorder::Create(Cluster::Get().AdminConfig(), {}).status().IsInvalidArgument());
}

}  // namespace
}  // namespace kcache
