// SPDX-License-Identifier: Apache-2.0

// ListPager: a paginated LIST (client-go's tools/pager).
//
// Each page after the first is requested with the previous page's continue
// token and without resourceVersion/resourceVersionMatch (the server rejects
// both together). The result carries the first page's resourceVersion. When
// a continue token expires (410), the pager retries once as one unpaginated
// list at the originally requested resourceVersion.
//
// Thread-safety: a ListPager is immutable after construction and may be
// used from several threads if its page function allows it.

#ifndef KCACHE_PAGER_H_
#define KCACHE_PAGER_H_

#include <functional>

#include "kcache/export.h"
#include "kcache/list.h"
#include "kcache/status_or.h"

namespace kcache {

// Fetches one page. Must return an Expired status for an expired token.
using ListPageFunc = std::function<StatusOr<ObjectList>(const ListOptions&)>;

struct KCACHE_EXPORT ListPagerOptions {
  // Used when the request's limit is 0. Default: 500 (client-go's).
  int64_t page_size = 500;
  // On an expired continue token, retry once without pagination.
  // Default: true.
  bool full_list_if_expired = true;
};

class KCACHE_EXPORT ListPager {
 public:
  struct Result {
    ObjectList list{};       // continue_token empty
    bool paginated = false;  // more than one page was requested
  };

  explicit ListPager(ListPageFunc page_fn, ListPagerOptions options = {})
      : page_fn_(std::move(page_fn)), options_(options) {}

  // Fetches every page and returns all items.
  StatusOr<Result> List(ListOptions options) const;

  // Streams every item to `fn` page by page, holding one page at a time.
  // `fn` returning an error stops the walk with that error. On success,
  // `*resource_version` is the list's resourceVersion.
  //
  // An expired continue token: with full_list_if_expired and `restart`
  // given, `restart()` is called (the caller drops what `fn` was given so
  // far) and one unpaginated list at the requested resourceVersion is
  // streamed to `fn`. Otherwise the Expired error is returned.
  Status EachListItem(ListOptions options, const std::function<Status(const ObjectPtr&)>& fn,
                      std::string* resource_version, bool* paginated = nullptr,
                      const std::function<Status()>& restart = nullptr) const;

  // Hands every page to `fn` as it arrives, holding one at a time; the last
  // has an empty continue_token. `options` may carry a continue token: the
  // walk then starts at that page. An expired continue token is handled as
  // by EachListItem: after `restart()`, the unpaginated list is one page.
  Status EachListPage(ListOptions options, const std::function<Status(ObjectList&)>& fn,
                      const std::function<Status()>& restart = nullptr) const;

 private:
  ListPageFunc page_fn_;
  ListPagerOptions options_;
};

}  // namespace kcache

#endif  // KCACHE_PAGER_H_
