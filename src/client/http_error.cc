// SPDX-License-Identifier: Apache-2.0

#include "client/http_error.h"

#include <string>

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace kcache::rest {
namespace {

// Plain-text bodies (404 for unknown paths, priority-and-fairness 429s) are
// quoted, but only so much of them: an error message is not a dump.
constexpr size_t kMaxQuotedBody = 256;

std::string Trimmed(std::string_view text) {
  std::string out(TrimSpace(text));
  if (out.size() > kMaxQuotedBody) {
    out.resize(kMaxQuotedBody);
    out += "...";
  }
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

// What client-go says for a bare code with no usable body.
std::string_view DefaultMessage(int http_code) {
  switch (http_code) {
    case 400:
      return "the server rejected our request for an unknown reason";
    case 401:
      return "the server has asked for the client to provide credentials";
    case 403:
      return "the server does not allow access to the requested resource";
    case 404:
      return "the server could not find the requested resource";
    case 409:
      return "the server reported a conflict";
    case 410:
      return "the server has asked for the client to start over";
    case 422:
      return "the server rejected our request due to an error in our request";
    case 429:
      return "the server has received too many requests and has asked us to try again later";
    case 500:
      return "an error on the server has prevented the request from succeeding";
    case 503:
      return "the server is currently unable to handle the request";
    case 504:
      return "the server was unable to return a response in the time allotted";
  }
  return "unexpected response from the server";
}

struct ParsedStatus {
  bool is_status = false;
  int code = 0;
  std::string reason;
  std::string message;
  std::optional<int64_t> retry_after;
  std::string continue_token;
  std::vector<StatusCause> causes;
};

ParsedStatus ParseStatus(std::string_view json) {
  ParsedStatus out;
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return out;
  auto kind = doc.find("kind");
  if (kind == doc.end() || !kind->is_string() || *kind != "Status") return out;
  out.is_status = true;
  auto str = [&](const nlohmann::json& obj, const char* name) -> std::string {
    auto it = obj.find(name);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  out.reason = str(doc, "reason");
  out.message = str(doc, "message");
  if (auto it = doc.find("code"); it != doc.end() && it->is_number_integer()) {
    out.code = it->get<int>();
  }
  if (auto d = doc.find("details"); d != doc.end() && d->is_object()) {
    if (auto r = d->find("retryAfterSeconds"); r != d->end() && r->is_number_integer()) {
      out.retry_after = r->get<int64_t>();
    }
    if (auto c = d->find("causes"); c != d->end() && c->is_array()) {
      for (const nlohmann::json& cause : *c) {
        if (!cause.is_object()) continue;
        out.causes.push_back({str(cause, "reason"), str(cause, "message"), str(cause, "field")});
      }
    }
  }
  if (auto m = doc.find("metadata"); m != doc.end() && m->is_object()) {
    out.continue_token = str(*m, "continue");
  }
  return out;
}

std::string_view ReasonFor(int http_code) {
  switch (http_code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
  }
  return "";
}

Status Build(int http_code, ParsedStatus parsed, std::optional<int64_t> retry_after,
             std::string_view fallback_text, std::string_view what) {
  int code = parsed.code != 0 ? parsed.code : http_code;
  std::string reason = parsed.reason.empty() ? std::string(ReasonFor(code)) : parsed.reason;
  std::string text = !parsed.message.empty() ? Trimmed(parsed.message) : Trimmed(fallback_text);
  if (text.empty()) text = DefaultMessage(code);
  std::string msg(what);
  if (!msg.empty()) msg += ": ";
  msg += text;
  msg += " (";
  if (code != 0) msg += "HTTP " + std::to_string(code);
  if (!reason.empty()) {
    if (code != 0) msg += ' ';
    msg += reason;
  }
  msg += ")";
  HttpError http{.http_code = code,
                 .reason = reason,
                 .retry_after_seconds = retry_after ? retry_after : parsed.retry_after,
                 .continue_token = parsed.continue_token,
                 .causes = std::move(parsed.causes)};
  return Status(CodeFor(code, reason), msg).WithHttpError(std::move(http));
}

}  // namespace

StatusCode CodeFor(int http_code, std::string_view reason) {
  if (reason == "Expired" || reason == "Gone") return StatusCode::kExpired;
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "TooManyRequests") return StatusCode::kResourceExhausted;
  if (reason == "Unauthorized") return StatusCode::kUnauthenticated;
  if (reason == "Forbidden") return StatusCode::kPermissionDenied;
  if (reason == "NotFound") return StatusCode::kNotFound;
  if (reason == "Timeout") return StatusCode::kDeadlineExceeded;
  switch (http_code) {
    case 400:
    case 422:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 405:
    case 406:
    case 415:
      return StatusCode::kUnimplemented;
    case 409:
      return StatusCode::kAborted;
    case 410:
      return StatusCode::kExpired;
    case 429:
      return StatusCode::kResourceExhausted;
    case 500:
      return StatusCode::kInternal;
    case 504:
      return StatusCode::kDeadlineExceeded;
  }
  if (http_code >= 500) return StatusCode::kUnavailable;
  if (http_code >= 400) return StatusCode::kInvalidArgument;
  return StatusCode::kInternal;
}

Status StatusFromResponse(int http_code, std::string_view body, std::optional<int64_t> retry_after,
                          std::string_view what) {
  ParsedStatus parsed = ParseStatus(body);
  if (!parsed.is_status) return Build(http_code, {}, retry_after, body, what);
  // The HTTP code is the one the client saw; a Status claiming another is
  // quoted by its reason only.
  parsed.code = http_code;
  return Build(http_code, std::move(parsed), retry_after, "", what);
}

Status StatusFromErrorEvent(std::string_view status_json, std::string_view what) {
  ParsedStatus parsed = ParseStatus(status_json);
  if (!parsed.is_status) {
    return Status::Internal(
        std::string(what) +
        ": watch ERROR event does not carry a Status object: " + Trimmed(status_json));
  }
  return Build(0, std::move(parsed), std::nullopt, "", what);
}

bool IsTooLargeResourceVersion(const Status& st) {
  const HttpError* h = st.http_error();
  if (h == nullptr) return false;
  if (h->HasCause("ResourceVersionTooLarge")) return true;
  // Servers from before the cause type (1.17.0 to 1.18.5) said it in a
  // cause's message, older ones in the message of a Timeout.
  if (st.code() != StatusCode::kDeadlineExceeded) return false;
  for (const StatusCause& c : h->causes) {
    if (c.message == "Too large resource version") return true;
  }
  return st.message().find("Too large resource version") != std::string_view::npos;
}

}  // namespace kcache::rest
