// SPDX-License-Identifier: Apache-2.0

// client-go's ListPager behaviour, against a fake paging server.

#include "kcache/pager.h"

#include <gtest/gtest.h>

#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

// Serves `n` items in pages; continue tokens are "<rv>:<next index>"; the
// list resourceVersion is "rv:20". It checks that continued requests carry
// no resourceVersion(Match), and can expire the token on a chosen page.
class FakePager {
 public:
  explicit FakePager(int n, int expire_on_page = -1) : n_(n), expire_on_page_(expire_on_page) {
    for (int i = 0; i < n; ++i) items_.push_back(testing::Pod("p" + std::to_string(i), "ns"));
  }

  StatusOr<ObjectList> operator()(const ListOptions& o) {
    ++calls_;
    requests_.push_back(o);
    int start = 0;
    if (!o.continue_token.empty()) {
      if (!o.resource_version.empty() || !o.resource_version_match.empty()) {
        return Status::InvalidArgument(
            "specifying resource version is not allowed when using continue");
      }
      ++page_;
      if (page_ == expire_on_page_) {
        return Status::Expired("The provided continue parameter is too old");
      }
      start = std::stoi(o.continue_token.substr(o.continue_token.rfind(':') + 1));
    }
    ObjectList list;
    list.resource_version = "rv:20";
    int end = o.limit > 0 ? std::min<int>(n_, start + static_cast<int>(o.limit)) : n_;
    for (int i = start; i < end; ++i) list.items.push_back(items_[i]);
    if (end < n_) list.continue_token = "rv:20:" + std::to_string(end);
    return list;
  }

  int calls_ = 0;
  std::vector<ListOptions> requests_;

 private:
  int n_;
  int expire_on_page_;
  int page_ = 0;
  std::vector<ObjectPtr> items_;
};

struct Case {
  const char* name;
  int items;
  int expire_on_page;
  bool full_list_if_expired;
  std::string rv;
  std::string rv_match;
  bool want_error;
  bool want_paginated;
};

TEST(ListPagerTest, ClientGoCases) {
  const Case cases[] = {
      {"empty page", 0, -1, true, "", "", false, false},
      {"one page", 9, -1, true, "", "", false, false},
      {"one full page", 10, -1, true, "", "", false, false},
      {"two pages", 11, -1, true, "", "", false, true},
      {"three pages", 21, -1, true, "", "", false, true},
      {"expires on second page", 21, 1, false, "", "", true, true},
      {"expires on second page, full list", 21, 1, true, "", "", false, true},
      {"two pages with resourceVersion", 11, -1, true, "rv:10", "", false, true},
      {"two pages with NotOlderThan", 11, -1, true, "rv:10", "NotOlderThan", false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto fake = std::make_shared<FakePager>(c.items, c.expire_on_page);
    ListPager pager([fake](const ListOptions& o) { return (*fake)(o); },
                    {.page_size = 10, .full_list_if_expired = c.full_list_if_expired});
    ListOptions opts;
    opts.resource_version = c.rv;
    opts.resource_version_match = c.rv_match;
    auto result = pager.List(opts);
    if (c.want_error) {
      ASSERT_FALSE(result.ok());
      EXPECT_TRUE(result.status().IsExpired());
      continue;
    }
    ASSERT_OK(result) << result.status();
    EXPECT_EQ(result->list.items.size(), static_cast<size_t>(c.items));
    EXPECT_EQ(result->list.resource_version, "rv:20");
    EXPECT_EQ(result->paginated, c.want_paginated);
    for (int i = 0; i < c.items; ++i) {
      EXPECT_EQ(result->list.items[i]->name(), "p" + std::to_string(i));
    }
    // The first request keeps the requested version; later pages drop it.
    EXPECT_EQ(fake->requests_[0].resource_version, c.rv);
    EXPECT_EQ(fake->requests_[0].limit, 10);
    if (c.expire_on_page > 0) {
      // One extra unpaginated request at the requested version.
      const ListOptions& last = fake->requests_.back();
      EXPECT_EQ(last.limit, 0);
      EXPECT_EQ(last.continue_token, "");
      EXPECT_EQ(last.resource_version, c.rv);
      EXPECT_EQ(fake->calls_, 3);
    }
  }
}

TEST(ListPagerTest, EachListItemStreamsPages) {
  auto fake = std::make_shared<FakePager>(25);
  ListPager pager([fake](const ListOptions& o) { return (*fake)(o); }, {.page_size = 10});
  std::vector<std::string> names;
  std::string rv;
  bool paginated = false;
  ASSERT_OK(pager.EachListItem(
      {},
      [&](const ObjectPtr& o) {
        names.push_back(o->name());
        return Status::OK();
      },
      &rv, &paginated));
  EXPECT_EQ(names.size(), 25u);
  EXPECT_EQ(rv, "rv:20");
  EXPECT_TRUE(paginated);
  EXPECT_EQ(fake->calls_, 3);

  // A visitor error stops the walk.
  int seen = 0;
  Status st = pager.EachListItem(
      {},
      [&](const ObjectPtr&) { return ++seen == 3 ? Status::Cancelled("enough") : Status::OK(); },
      &rv);
  EXPECT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_EQ(seen, 3);

  // Without a restart callback, an expired token is returned, not papered
  // over: what was delivered cannot be taken back.
  auto expiring = std::make_shared<FakePager>(25, 1);
  ListPager p2([expiring](const ListOptions& o) { return (*expiring)(o); }, {.page_size = 10});
  EXPECT_TRUE(p2.EachListItem(
                    {}, [](const ObjectPtr&) { return Status::OK(); }, &rv)
                  .IsExpired());
}

// With a restart callback, an expired continue token restarts the walk as
// one unpaginated list at the requested resourceVersion, as client-go's
// pager does.
TEST(ListPagerTest, EachListItemRestartsWithOneFullListOnExpiredToken) {
  auto fake = std::make_shared<FakePager>(25, 2);
  ListPager pager([fake](const ListOptions& o) { return (*fake)(o); }, {.page_size = 10});
  std::vector<std::string> names;
  int restarts = 0;
  std::string rv;
  ListOptions o;
  o.resource_version = "7";
  ASSERT_OK(pager.EachListItem(
      o,
      [&](const ObjectPtr& obj) {
        names.push_back(obj->name());
        return Status::OK();
      },
      &rv, nullptr,
      [&] {
        ++restarts;
        names.clear();
        return Status::OK();
      }));
  EXPECT_EQ(restarts, 1);
  EXPECT_EQ(names.size(), 25u);
  ASSERT_EQ(fake->calls_, 4);
  EXPECT_EQ(fake->requests_[3].limit, 0);
  EXPECT_EQ(fake->requests_[3].continue_token, "");
  EXPECT_EQ(fake->requests_[3].resource_version, "7");
  EXPECT_EQ(rv, "rv:20");

  // Asked not to, the pager returns the expiry even with a callback.
  auto fake2 = std::make_shared<FakePager>(25, 1);
  ListPager strict([fake2](const ListOptions& lo) { return (*fake2)(lo); },
                   {.page_size = 10, .full_list_if_expired = false});
  EXPECT_TRUE(strict
                  .EachListItem(
                      {}, [](const ObjectPtr&) { return Status::OK(); }, &rv, nullptr,
                      [] { return Status::OK(); })
                  .IsExpired());
}

}  // namespace
}  // namespace kcache
