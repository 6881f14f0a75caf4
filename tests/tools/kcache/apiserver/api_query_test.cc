// SPDX-License-Identifier: Apache-2.0

// The list and watch rules both servers of kcache serve follow (the rows
// of docs/serve.md's semantics table that depend on the parameters alone).

#include "tools/kcache/apiserver/api_query.h"

#include <gtest/gtest.h>

namespace kcache::serve {
namespace {

Query List(std::optional<std::string> rv, std::string match = "", size_t limit = 0,
           std::string token = "") {
  Query q;
  q.rv = std::move(rv);
  q.rv_match = std::move(match);
  q.limit = limit;
  q.continue_token = std::move(token);
  return q;
}

TEST(PlanListTest, EachParameterSetReadsTheStateTheApiServerReads) {
  struct Case {
    Query q;
    ListPlan::Read read;
    uint64_t rv;
    size_t limit;
  } cases[] = {
      {List(std::nullopt), ListPlan::Read::kCurrent, 0, 0},
      {List(std::nullopt, "", 500), ListPlan::Read::kCurrent, 0, 500},
      {List("0", "", 500), ListPlan::Read::kCurrent, 0, 0},  // Any: whole, the limit ignored
      {List("42"), ListPlan::Read::kNotOlderThan, 42, 0},
      {List("42", "NotOlderThan", 500), ListPlan::Read::kNotOlderThan, 42, 500},
      {List("42", "", 500), ListPlan::Read::kExact, 42, 500},  // paginated at a version: etcd's
      {List("42", "Exact"), ListPlan::Read::kExact, 42, 0},
      {List("007"), ListPlan::Read::kNotOlderThan, 7, 0},  // read as strconv.ParseUint reads it
  };
  for (const Case& c : cases) {
    ListPlan plan;
    std::optional<Reply> bad = PlanList(c.q, &plan);
    ASSERT_FALSE(bad) << c.q.rv.value_or("(none)") << ": " << bad->message;
    EXPECT_EQ(plan.read, c.read) << c.q.rv.value_or("(none)") << " " << c.q.rv_match;
    EXPECT_EQ(plan.rv, c.rv) << c.q.rv.value_or("(none)");
    EXPECT_EQ(plan.limit, c.limit) << c.q.rv.value_or("(none)");
    EXPECT_FALSE(plan.continuing);
  }
}

TEST(PlanListTest, AContinueTokenIsAnExactReadFromItsKey) {
  ListPlan plan;
  ASSERT_FALSE(PlanList(List(std::nullopt, "", 10, EncodeContinue(77, "ns/b")), &plan));
  EXPECT_EQ(plan.read, ListPlan::Read::kExact);
  EXPECT_EQ(plan.rv, 77u);
  EXPECT_EQ(plan.start, "ns/b");
  EXPECT_TRUE(plan.continuing);
  EXPECT_FALSE(plan.remaining);
  // The count a page made travels with its token, so that the next page
  // derives remainingItemCount instead of counting the rest again.
  ASSERT_FALSE(PlanList(List(std::nullopt, "", 10, EncodeContinue(77, "ns/b", 12345)), &plan));
  EXPECT_EQ(plan.start, "ns/b");
  EXPECT_EQ(plan.remaining, 12345);
  // "0" beside a token is allowed, as the apiserver allows it.
  EXPECT_FALSE(PlanList(List("0", "", 10, EncodeContinue(77, "ns/b")), &plan));
}

TEST(PlanListTest, RefusalsAreTheApiServers) {
  ListPlan plan;
  std::optional<Reply> r = PlanList(List("5", "", 10, EncodeContinue(77, "k")), &plan);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, 400);
  EXPECT_EQ(r->message, "specifying resource version is not allowed when using continue");
  r = PlanList(List(std::nullopt, "", 10, "not-a-token"), &plan);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, 400);
  r = PlanList(List("abc"), &plan);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, 400);
  EXPECT_EQ(r->message, "invalid resource version \"abc\"");
  r = PlanList(List(std::nullopt, "Exact"), &plan);  // a match needs a version
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, 422);
}

TEST(PlanWatchTest, StartsAfterItsVersionOrFromNow) {
  std::optional<uint64_t> from = 3;
  ASSERT_FALSE(PlanWatch(List(std::nullopt), &from));
  EXPECT_EQ(from, std::nullopt);
  ASSERT_FALSE(PlanWatch(List("0"), &from));
  EXPECT_EQ(from, std::nullopt);
  ASSERT_FALSE(PlanWatch(List("42"), &from));
  EXPECT_EQ(from, 42u);
  std::optional<Reply> r = PlanWatch(List("x1"), &from);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, 400);
}

}  // namespace
}  // namespace kcache::serve
