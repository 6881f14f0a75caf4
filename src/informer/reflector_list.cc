// SPDX-License-Identifier: Apache-2.0

// The reflector's lists: client-go's ladder from a streaming list to a
// paginated LIST, a list cut short continued, and the progress of each.

#include "informer/reflector_impl.h"

#include <nlohmann/json.hpp>

#include "informer/watch_errors.h"
#include "kcache/pager.h"
#include "util/scope_guard.h"

namespace kcache::informer {

StatusOr<std::unique_ptr<WatchStream>> ReflectorImpl::ListAll(std::stop_token stop) {
  quiet_rule_closed_ = true;
  bool fall_back = false;
  KCACHE_ASSIGN_OR_RETURN(std::optional<CutShortRelist> cut, sink_->GetCutShortRelist());
  std::optional<ListProgress> from;
  if (cut) from = Continuable(cut->progress);
  for (;;) {
    std::string rv = unavailable_ ? "" : LastSyncResourceVersion();
    // Whether to stream, as the server's other reflectors learned it.
    StreamingSupport::Decision decision = StreamingSupport::Decision::kStream;
    if (!from && streaming_ && !fall_back && !cut && o_.streaming_support)
      decision = o_.streaming_support->Decide(stop);
    StatusOr<std::unique_ptr<WatchStream>> result = Status::OK();
    if (from) {
      bool refused = false;
      Status st = PagedList("", stop, &*from, &refused);
      if (refused) {
        Emit(ReflectorEvent::Type::kRelist,
             lw_->Describe() + ": the server would not continue the LIST cut short (" +
                 std::string(st.message()) + "): listing from the start");
        from.reset();
        continue;
      }
      result = st.ok() ? StatusOr<std::unique_ptr<WatchStream>>(nullptr)
                       : StatusOr<std::unique_ptr<WatchStream>>(st);
    } else if (streaming_ && !fall_back && !cut && decision != StreamingSupport::Decision::kList) {
      bool refused = false;
      result =
          StreamingList(rv, stop, &refused, decision == StreamingSupport::Decision::kTryAndReport);
      if (!result.ok() && !stop.stop_requested()) {
        const Status& st = result.status();
        if (refused) {
          streaming_ = false;
          continue;
        }
        if (!rv.empty() && informer::IsUnavailableResourceVersion(st)) {
          unavailable_ = true;  // retry at once from ""
          continue;
        }
        if (!informer::IsRetriableWatchError(st)) {
          Emit(ReflectorEvent::Type::kError, lw_->Describe() + ": the streaming list failed (" +
                                                 std::string(st.message()) +
                                                 "): falling back to LIST");
          fall_back = true;
          continue;
        }
        // 429 or no connection: client-go backs off and streams again
        // without telling its handler; so does Run here.
        return LogOnly(st);
      }
    } else {
      Status st = PagedList(rv, stop);
      result = st.ok() ? StatusOr<std::unique_ptr<WatchStream>>(nullptr)
                       : StatusOr<std::unique_ptr<WatchStream>>(st);
      if (!st.ok() && !rv.empty() && informer::IsUnavailableResourceVersion(st)) {
        unavailable_ = true;  // retry at once from ""
        continue;
      }
    }
    if (result.ok()) {
      need_list_ = false;
      unavailable_ = false;
      sink_trusted_ = true;
      expired_.clear();
      listed_rv_ = LastSyncResourceVersion();
      MarkSynced();
    }
    return result;
  }
}

std::string ReflectorImpl::Encode(const ListProgress& p) {
  return nlohmann::json{{"continue", p.continue_token}, {"resourceVersion", p.resource_version},
                        {"server", p.server},           {"list", p.list},
                        {"objects", p.objects},         {"bytes", p.bytes}}
      .dump();
}

auto ReflectorImpl::Continuable(const std::string& progress) -> std::optional<ListProgress> {
  std::string why;
  ListProgress p;
  if (!sink_trusted_) {
    why = "the reflector was asked not to build on what the sink holds";
  } else if (progress.empty()) {
    why = "no page of it was committed";
  } else {
    // Read field by field, type checked: a damaged record is no reason
    // to stop (nlohmann's value() throws on a type it did not expect).
    const nlohmann::json j = nlohmann::json::parse(progress, nullptr, false);
    auto text = [&](const char* k) {
      auto it = j.is_object() ? j.find(k) : j.end();
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto number = [&](const char* k) {
      auto it = j.is_object() ? j.find(k) : j.end();
      return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t{0};
    };
    p.continue_token = text("continue");
    p.resource_version = text("resourceVersion");
    p.server = text("server");
    p.list = text("list");
    p.objects = number("objects");
    p.bytes = number("bytes");
    if (p.continue_token.empty()) {
      why = "its progress record has no continue token, or is not one this version wrote";
    } else if (p.list != lw_->Describe()) {
      why = "it listed " + p.list;
    } else if (p.server != identity_) {
      why = "it listed the server whose identity is " +
            (p.server.empty() ? std::string("unknown") : p.server) + ", not " +
            (identity_.empty() ? std::string("this unknown one") : identity_);
    }
  }
  if (!why.empty()) {
    Emit(ReflectorEvent::Type::kRelist,
         lw_->Describe() + ": the last list was cut short and cannot be continued (" + why +
             "): listing again page by page, keeping what it wrote where it is unchanged");
    return std::nullopt;
  }
  Emit(ReflectorEvent::Type::kRelist,
       lw_->Describe() + ": continuing the LIST cut short at resourceVersion " +
           p.resource_version + " after " + std::to_string(p.objects) + " objects");
  return p;
}

Status ReflectorImpl::PagedList(const std::string& rv, std::stop_token stop,
                                const ListProgress* from, bool* refused) {
  Status failed;  // the last page request's error
  ListPager pager(
      [this, &stop, &rv, &failed](const ListOptions& o) -> StatusOr<ObjectList> {
        if (stop.stop_requested()) return Status::Cancelled("stopped");
        {
          std::lock_guard l(mu_);
          ++stats_.list_requests;
        }
        StatusOr<ObjectList> page = lw_->List(o);
        failed = page.status();
        if (page.ok() && o.continue_token.empty() && !expired_.empty() && rv == expired_) {
          std::optional<int> cmp = Compare(page->resource_version, expired_);
          if (cmp && *cmp <= 0) {
            return Status::Expired("the server listed resourceVersion " + page->resource_version +
                                   ", not newer than the expired " + expired_ +
                                   " (it ignored resourceVersionMatch)");
          }
        }
        return page;
      },
      ListPagerOptions{o_.page_size, true});
  std::unique_ptr<ReplaceSession> session;
  ListOptions o;
  o.limit = o_.page_size;
  o.cancel = stop;
  // Objects and bytes listed: by this request (n, bytes) and in all
  // (before the cut plus n, for the checkpoints).
  uint64_t n = 0, bytes = 0, n0 = 0, bytes0 = 0;
  if (from) {
    KCACHE_ASSIGN_OR_RETURN(session, sink_->ContinueReplace());
    o.continue_token = from->continue_token;
    n0 = from->objects;
    bytes0 = from->bytes;
  } else {
    // The session begins with the first page: a LIST refused outright
    // (a selector the server rejects, the server unreachable) leaves the
    // sink as it was, resume point included.
    o.resource_version = rv;
    if (!rv.empty() && rv != "0") o.resource_version_match = "NotOlderThan";
  }
  std::string list_rv;
  bool first = true, continued = from != nullptr;
  Listing(n0, bytes0);
  Status st = pager.EachListPage(
      o,
      [&](ObjectList& page) -> Status {
        if (first) list_rv = page.resource_version;
        first = false;
        if (!session) {
          KCACHE_ASSIGN_OR_RETURN(session, sink_->BeginReplace());
        }
        for (ObjectPtr& obj : page.items) {
          ++n;
          bytes += obj->byte_size();
          KCACHE_RETURN_IF_ERROR(session->Put(std::move(obj)));
        }
        Listing(n0 + n, bytes0 + bytes,
                page.remaining_item_count && *page.remaining_item_count > 0
                    ? n0 + n + static_cast<uint64_t>(*page.remaining_item_count)
                    : 0);
        if (page.continue_token.empty()) return Status::OK();
        return session->Checkpoint(Encode(
            {page.continue_token, list_rv, identity_, lw_->Describe(), n0 + n, bytes0 + bytes}));
      },
      [&]() -> Status {
        // The token of the first page asked for: the list cut short
        // cannot go on.
        if (from && first) {
          *refused = true;
          return failed;
        }
        // A continue token expired: the pager lists everything again in
        // one request, into a new session (the old one is dropped unfinished).
        session.reset();
        n = bytes = n0 = bytes0 = 0;
        first = true;
        continued = false;
        Listing(0, 0);
        return Status::OK();
      });
  if (!st.ok()) {
    if (from && first && informer::IsRefusedAsInvalid(st)) *refused = true;
    return st;
  }
  KCACHE_ASSIGN_OR_RETURN(size_t unchanged, session->Finish(list_rv));
  if (continued) {
    std::lock_guard l(mu_);
    ++stats_.continued_lists;
  }
  const std::string how =
      continued ? "LIST (continued after " + std::to_string(n0) + " objects)" : std::string("LIST");
  Listed(how, n, bytes, unchanged, list_rv);
  return Status::OK();
}

StatusOr<std::unique_ptr<WatchStream>> ReflectorImpl::StreamingList(const std::string& rv,
                                                                    std::stop_token stop,
                                                                    bool* refused, bool report) {
  ListOptions o;
  o.resource_version = rv;
  o.resource_version_match = "NotOlderThan";
  o.send_initial_events = true;
  o.allow_watch_bookmarks = true;
  o.timeout_seconds = WatchTimeout();
  o.cancel = stop;
  auto opened = OpenWatch(o, /*list=*/true);
  if (!opened.ok()) *refused = informer::IsRefusedAsInvalid(opened.status());
  if (report) {
    using Outcome = StreamingSupport::Outcome;
    o_.streaming_support->Report(opened.ok() ? Outcome::kOpened
                                 : *refused  ? Outcome::kRefused
                                             : Outcome::kUnknown);
  }
  if (!opened.ok()) return opened.status();
  {
    std::lock_guard l(mu_);
    ++stats_.watches;
  }
  std::unique_ptr<WatchStream> stream = *std::move(opened);
  if (!SetActive(stream.get(), stop)) return Status::Cancelled("stopped");
  // Stop cancels through active_: it is cleared on every return, before
  // `stream` (declared first) is destroyed or handed to the caller.
  util::ScopeGuard inactive([&] { SetActive(nullptr, stop); });
  KCACHE_ASSIGN_OR_RETURN(auto session, sink_->BeginReplace());
  uint64_t n = 0, bytes = 0;
  Listing(0, 0);
  for (;;) {
    auto ev = stream->Next();
    if (!ev.ok()) return ev.status();
    if (!*ev) {
      return Status::Unavailable(
          lw_->Describe() + ": the streaming list ended before its initial-events-end bookmark");
    }
    WatchEvent& e = **ev;
    if (e.IsInitialEventsEnd()) {
      std::string list_rv = e.object->resource_version();
      KCACHE_ASSIGN_OR_RETURN(size_t unchanged, session->Finish(list_rv));
      Listed("streaming list", n, bytes, unchanged, list_rv);
      return stream;  // the same stream goes on as a watch
    }
    if (e.type == WatchEventType::kAdded && !Expected(e)) continue;
    if (e.type != WatchEventType::kAdded) {
      // A server that ignores sendInitialEvents sends ordinary events
      // with no end bookmark.
      *refused = true;
      if (o_.streaming_support) o_.streaming_support->Report(StreamingSupport::Outcome::kRefused);
      return Status::Unimplemented(lw_->Describe() + ": the server ignored sendInitialEvents");
    }
    ++n;
    bytes += e.object->byte_size();
    Listing(n, bytes);
    KCACHE_RETURN_IF_ERROR(session->Put(std::move(e.object)));
  }
}

void ReflectorImpl::Listing(uint64_t n, uint64_t bytes, uint64_t expected) {
  std::lock_guard l(mu_);
  stats_.listing_objects = n;
  stats_.listing_bytes = bytes;
  stats_.listing_expected = expected;
}

void ReflectorImpl::Listed(const std::string& how, uint64_t n, uint64_t bytes, size_t unchanged,
                           const std::string& rv) {
  {
    std::lock_guard l(mu_);
    stats_.listing_objects = stats_.listing_bytes = stats_.listing_expected = 0;
    ++stats_.lists;
    stats_.listed_objects += n;
    stats_.listed_bytes += bytes;
    stats_.bytes += bytes;
    stats_.last_applied = clock_->Now();
    stats_.failing_since = Clock::TimePoint{};
    stats_.server_identity = identity_;  // before kListed: its handlers read it
    last_rv_ = rv;
  }
  Emit(ReflectorEvent::Type::kListed, lw_->Describe() + ": " + how + " of " + std::to_string(n) +
                                          " objects at resourceVersion " + rv + " applied (" +
                                          std::to_string(n - std::min<uint64_t>(n, unchanged)) +
                                          " written, " + std::to_string(unchanged) + " unchanged)");
}

}  // namespace kcache::informer
