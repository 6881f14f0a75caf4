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
  if (options.limit == 0) options.limit = options_.page_size;
  const std::string requested_rv = options.resource_version;
  const std::string requested_match = options.resource_version_match;
  bool first = true;
  if (paginated) *paginated = false;
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
      *resource_version = full.resource_version;
      for (const ObjectPtr& item : full.items) KCACHE_RETURN_IF_ERROR(fn(item));
      return Status::OK();
    }
    if (!page.ok()) return page.status();
    if (first) {
      *resource_version = page->resource_version;
      first = false;
    }
    for (const ObjectPtr& item : page->items) KCACHE_RETURN_IF_ERROR(fn(item));
    if (page->continue_token.empty()) return Status::OK();
    options.continue_token = std::move(page->continue_token);
    options.resource_version.clear();
    options.resource_version_match.clear();
    if (paginated) *paginated = true;
  }
}

}  // namespace kcache
