// SPDX-License-Identifier: Apache-2.0

// Two clusters (kcache serve, different seeds) synced into one database by
// `kcache sync --postgres`, and read back with `kcache get --postgres`: the
// same objects, in kubectl's idiom, as `kcache get --cache` prints from
// each cluster's own cache, with a CLUSTER column; and the refusals a user
// meets on the command line.

#include <algorithm>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/command.h"
#include "testing/fleet_db.h"
#include "testing/temp_dir.h"

namespace kcache::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Each line's words: tables compare whatever their column widths.
std::vector<std::vector<std::string>> Words(const std::string& text) {
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    lines.push_back(std::move(w));
  }
  return lines;
}

class FleetGetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto db = ConnectDb();
    ASSERT_NE(db, nullptr);
    DropFleetSchema(*db);
    dir_ = new TempDir();
    a_ = new ServeProcess(
        StartServe("--listen 127.0.0.1:0 --pods 300 --namespaces 3 --nodes 4 --seed 21"));
    b_ = new ServeProcess(
        StartServe("--listen 127.0.0.1:0 --pods 200 --namespaces 2 --nodes 3 --seed 22"));
    for (auto [name, server] : {std::pair{"east", a_}, std::pair{"west", b_}}) {
      CommandResult r = RunCommand(KcacheBin() + " sync pods nodes --until-synced --cache " +
                                   dir_->Sub(name) + " --server " + server->url + " --postgres '" +
                                   PostgresUrl() + "' --cluster " + name + " 2>&1");
      ASSERT_EQ(r.exit_code, 0) << r.output;
      EXPECT_THAT(r.output, HasSubstr("postgres: fed up to the cache's resume points"));
    }
  }
  static void TearDownTestSuite() {
    delete a_;
    delete b_;
    delete dir_;
  }

  static CommandResult Get(const std::string& args) {
    return RunCommand(KcacheBin() + " get " + args + " --postgres '" + PostgresUrl() + "' 2>&1");
  }
  static CommandResult GetCache(const std::string& name, const std::string& args) {
    return RunCommand(KcacheBin() + " get " + args + " --cache " + dir_->Sub(name) + " 2>&1");
  }

  static TempDir* dir_;
  static ServeProcess* a_;
  static ServeProcess* b_;
};

TempDir* FleetGetTest::dir_ = nullptr;
ServeProcess* FleetGetTest::a_ = nullptr;
ServeProcess* FleetGetTest::b_ = nullptr;

// One cluster's table is its cache's table with CLUSTER in front.
TEST_F(FleetGetTest, OneClusterPrintsAsItsCacheWithAClusterColumn) {
  for (const std::string args :
       {"pods -A", "pods -n ns-1 -o wide", "nodes", "pods -A -l tier=web --show-labels"}) {
    CommandResult fleet = Get(args + " --cluster east");
    CommandResult cache = GetCache("east", args);
    ASSERT_EQ(fleet.exit_code, 0) << fleet.output;
    ASSERT_EQ(cache.exit_code, 0) << cache.output;
    auto want = Words(cache.output);
    auto have = Words(fleet.output);
    ASSERT_EQ(have.size(), want.size()) << args << "\n" << fleet.output;
    ASSERT_GT(want.size(), 1u) << args;
    // AGE may tick between the two commands: every other cell must match.
    const auto age = std::find(want[0].begin(), want[0].end(), "AGE") - want[0].begin();
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_FALSE(have[i].empty());
      EXPECT_EQ(have[i][0], i == 0 ? "CLUSTER" : "east") << args << " line " << i;
      std::vector<std::string> rest(have[i].begin() + 1, have[i].end());
      ASSERT_EQ(rest.size(), want[i].size()) << args << " line " << i;
      for (size_t c = 0; c < rest.size(); ++c) {
        if (static_cast<ptrdiff_t>(c) != age || i == 0) {
          EXPECT_EQ(rest[c], want[i][c]) << args << " line " << i << " cell " << c;
        }
      }
    }
  }
  CommandResult fleet = Get("pods -A -o name --cluster west");
  CommandResult cache = GetCache("west", "pods -A -o name");
  ASSERT_EQ(fleet.exit_code, 0) << fleet.output;
  EXPECT_EQ(fleet.output, cache.output);
}

TEST_F(FleetGetTest, AllClustersReadsBothInOneTable) {
  CommandResult all = Get("pods -A --all-clusters --no-headers");
  ASSERT_EQ(all.exit_code, 0) << all.output;
  size_t east = 0, west = 0;
  for (const auto& w : Words(all.output)) {
    if (w.empty()) continue;
    east += w[0] == "east";
    west += w[0] == "west";
  }
  size_t want_east = Words(GetCache("east", "pods -A --no-headers").output).size();
  size_t want_west = Words(GetCache("west", "pods -A --no-headers").output).size();
  EXPECT_EQ(east, want_east);
  EXPECT_EQ(west, want_west);
  EXPECT_GT(east, 0u);
  EXPECT_GT(west, 0u);

  CommandResult json = Get("nodes --all-clusters -o json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_THAT(json.output, HasSubstr("\"kcache.io/cluster\": \"east\""));
  EXPECT_THAT(json.output, HasSubstr("\"kcache.io/cluster\": \"west\""));
  EXPECT_THAT(json.output, HasSubstr("\"kind\": \"List\""));
}

TEST_F(FleetGetTest, ClearErrors) {
  CommandResult two = Get("pods -A");
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_THAT(two.output,
              HasSubstr("holds 2 clusters (east, west): give --cluster NAME or --all-clusters"));
  CommandResult unknown = Get("pods --cluster north");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.output, HasSubstr("has no cluster \"north\" (it has: east, west)"));
  CommandResult type = Get("frobs --cluster east");
  EXPECT_EQ(type.exit_code, 1);
  EXPECT_THAT(type.output, HasSubstr("has no resource type \"frobs\""));
  CommandResult missing = Get("pods nope -n ns-0 --cluster east");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("Error from server (NotFound): pods \"nope\" not found"));
  CommandResult watch = Get("pods -w --cluster east");
  EXPECT_EQ(watch.exit_code, 1);
  EXPECT_THAT(watch.output, HasSubstr("--watch follows a cache"));
  CommandResult both = RunCommand(KcacheBin() + " get pods --cluster east 2>&1");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.output, HasSubstr("give --postgres URL"));
}

// Another cluster under a used name, and a second live sync of one
// cluster: refused, each with what to do.
TEST_F(FleetGetTest, SyncRefusesAnotherClusterUnderAUsedNameAndASecondFeed) {
  CommandResult other = RunCommand(KcacheBin() + " sync pods --until-synced --cache " +
                                   dir_->Sub("west") + " --server " + b_->url + " --postgres '" +
                                   PostgresUrl() + "' --cluster east 2>&1");
  EXPECT_EQ(other.exit_code, 1) << other.output;
  EXPECT_THAT(other.output, HasSubstr("give it another --cluster name"));

  Background first =
      StartCommand(KcacheBin() + " sync pods --cache " + dir_->Sub("east") + " --server " +
                   a_->url + " --postgres '" + PostgresUrl() + "' --cluster east 2>&1");
  std::string seen = ReadLines(first.out, 3);
  CommandResult second =
      RunCommand(KcacheBin() + " sync pods --cache " + dir_->Sub("east2") + " --server " + a_->url +
                 " --postgres '" + PostgresUrl() + "' --cluster east 2>&1");
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_THAT(second.output, HasSubstr("is being fed by another kcache: \"kcache feed east"));
  EXPECT_EQ(Stop(first, SIGTERM), 0) << seen;
}

}  // namespace
}  // namespace kcache::testing
