// SPDX-License-Identifier: Apache-2.0

// Faults `kcache serve` injects on chosen requests, to show how a client
// copes with what a real apiserver does only now and then.
//
// Requests are the list, watch, get and write requests to resources (not
// discovery, /version or /metrics), numbered from 1 in order of arrival.

#ifndef KCACHE_TOOLS_KCACHE_TESTCLUSTER_FAULTS_H_
#define KCACHE_TOOLS_KCACHE_TESTCLUSTER_FAULTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/status_or.h"

namespace kcache::serve {

// Which requests a fault hits: "3", "3,7,9", "*5" (every fifth) or a mix
// such as "2,*10". Empty: none.
class RequestSet {
 public:
  RequestSet() = default;
  // InvalidArgument naming the flag and the bad item.
  static StatusOr<RequestSet> Parse(std::string_view flag, std::string_view spec);
  bool Contains(uint64_t request) const;
  bool empty() const { return numbers_.empty() && every_.empty(); }

 private:
  std::vector<uint64_t> numbers_;
  std::vector<uint64_t> every_;
};

struct Faults {
  // Cut the response mid-way: a list after half its bytes, a watch in the
  // middle of its next event after the initial ones; the connection closes
  // without the chunked terminator.
  RequestSet cut;
  // 410 Expired: a list gets an HTTP 410, a watch a 200 stream with one
  // ERROR event, as the apiserver sends them.
  RequestSet expire;
  // 429 TooManyRequests with Retry-After: retry_after_seconds.
  RequestSet throttle;
  int64_t retry_after_seconds = 1;
  // 500 InternalError: a list gets an HTTP 500, a watch a 200 stream with
  // one ERROR event of code 500, as the apiserver reports errors (such as a
  // storage read error) after a watch has started.
  RequestSet internal_error;
  // Invalid JSON in the body: a list's items are cut short, a watch gets
  // an event that does not parse.
  RequestSet malformed;
  // Headers (and a watch's initial events) go out, then nothing more until
  // the client goes away or the server stops.
  RequestSet stall;
  // Every response is sent at most this fast (0: no limit): a slow link or
  // a congested server.
  int64_t slow_bytes_per_second = 0;
};

}  // namespace kcache::serve

#endif  // KCACHE_TOOLS_KCACHE_TESTCLUSTER_FAULTS_H_
