// SPDX-License-Identifier: Apache-2.0

// Turning API server errors into Status: HTTP responses with a metav1.Status
// or plain-text body, and the Status objects of watch ERROR events. The one
// place where HTTP codes and Kubernetes reasons map to StatusCode.
#ifndef KCACHE_SRC_CLIENT_HTTP_ERROR_H_
#define KCACHE_SRC_CLIENT_HTTP_ERROR_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "kcache/status.h"

namespace kcache::rest {

// The StatusCode for an HTTP code and (possibly empty) Kubernetes reason.
// The reason decides where it is specific ("Expired"/"Gone" are Expired even
// without a code); otherwise the HTTP code does.
StatusCode CodeFor(int http_code, std::string_view reason);

// The Status for a response with a non-2xx `http_code`. `body` is a
// metav1.Status in JSON or any text; `retry_after` is the Retry-After header
// when it held whole seconds. `what` names the request, e.g.
// "GET /api/v1/pods". The message never includes request headers.
Status StatusFromResponse(int http_code, std::string_view body, std::optional<int64_t> retry_after,
                          std::string_view what);

// The Status for a watch ERROR event whose object is `status_json`. An
// object that is not a metav1.Status still gives an error (Internal).
Status StatusFromErrorEvent(std::string_view status_json, std::string_view what);

// True if the server could not serve a resourceVersion because it has not
// reached it yet: a cause of type ResourceVersionTooLarge, or, from servers
// older than that cause (before 1.18.6), a Timeout whose cause or message
// says "Too large resource version" (client-go's
// isTooLargeResourceVersionError).
bool IsTooLargeResourceVersion(const Status& st);

}  // namespace kcache::rest

#endif  // KCACHE_SRC_CLIENT_HTTP_ERROR_H_
