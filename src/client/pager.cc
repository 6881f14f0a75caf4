// SPDX-License-Identifier: Apache-2.0

#include "kcache/pager.h"

namespace kcache {

StatusOr<ListPager::Result> ListPager::List(ListOptions options) const {
  if (options.limit == 0) options.limit = options_.page_size;
  const std::string requested_rv = options.resource_version;
  const std::string requested_match = options.resource_version_match;
  Result result;
  bool first = true;
  while (true) {
    StatusOr<ObjectList> page = page_fn_(options);
    if (!page.ok()) {
      if (!page.status().IsExpired() || !options_.full_list_if_expired ||
          options.continue_token.empty()) {
        return page.status();
      }
      // The token expired mid-way: one full list at the requested version.
      options.limit = 0;
      options.continue_token.clear();
      options.resource_version = requested_rv;
      options.resource_version_match = requested_match;
      KCACHE_ASSIGN_OR_RETURN(result.list, page_fn_(options));
      return result;
    }
    if (first) {
      result.list.resource_version = page->resource_version;
      first = false;
    }
    for (ObjectPtr& item : page->items) result.list.items.push_back(std::move(item));
    if (page->continue_token.empty()) return result;
    options.continue_token = std::move(page->continue_token);
    options.resource_version.clear();
    options.resource_version_match.clear();
    result.paginated = true;
  }
}

Status ListPager::EachListItem(ListOptions options,
                               const std::function<Status(const ObjectPtr&)>& fn,
                               std::string* resource_version, bool* paginated,
                               const std::function<Status()>& restart) const {
  bool first = true;
  if (paginated) *paginated = false;
  std::function<Status()> again;
  if (restart) {
    again = [&]() -> Status {
      first = true;
      if (paginated) *paginated = false;
      return restart();
    };
  }
  return EachListPage(
      std::move(options),
      [&](ObjectList& page) -> Status {
        if (first) *resource_version = page.resource_version;
        if (!first && paginated) *paginated = true;
        first = false;
        for (const ObjectPtr& item : page.items) KCACHE_RETURN_IF_ERROR(fn(item));
        return Status::OK();
      },
      again);
}

Status ListPager::EachListPage(ListOptions options, const std::function<Status(ObjectList&)>& fn,
                               const std::function<Status()>& restart) const {
  if (options.limit == 0) options.limit = options_.page_size;
  const std::string requested_rv = options.resource_version;
  const std::string requested_match = options.resource_version_match;
  while (true) {
    StatusOr<ObjectList> page = page_fn_(options);
    if (!page.ok() && page.status().IsExpired() && options_.full_list_if_expired && restart &&
        !options.continue_token.empty()) {
      // The token expired mid-way: start over with one full list at the
      // requested version.
      KCACHE_RETURN_IF_ERROR(restart());
      options.limit = 0;
      options.continue_token.clear();
      options.resource_version = requested_rv;
      options.resource_version_match = requested_match;
      KCACHE_ASSIGN_OR_RETURN(ObjectList full, page_fn_(options));
      full.continue_token.clear();
      return fn(full);
    }
    if (!page.ok()) return page.status();
    std::string next = page->continue_token;
    KCACHE_RETURN_IF_ERROR(fn(*page));
    if (next.empty()) return Status::OK();
    options.continue_token = std::move(next);
    options.resource_version.clear();
    options.resource_version_match.clear();
  }
}

}  // namespace kcache
