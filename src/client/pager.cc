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
                               std::string* resource_version, bool* paginated) const {
  if (options.limit == 0) options.limit = options_.page_size;
  bool first = true;
  if (paginated) *paginated = false;
  while (true) {
    KCACHE_ASSIGN_OR_RETURN(ObjectList page, page_fn_(options));
    if (first) {
      *resource_version = page.resource_version;
      first = false;
    }
    for (const ObjectPtr& item : page.items) KCACHE_RETURN_IF_ERROR(fn(item));
    if (page.continue_token.empty()) return Status::OK();
    options.continue_token = std::move(page.continue_token);
    options.resource_version.clear();
    options.resource_version_match.clear();
    if (paginated) *paginated = true;
  }
}

}  // namespace kcache
