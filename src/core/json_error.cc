// SPDX-License-Identifier: Apache-2.0

#include "core/json_error.h"

#include <string>

#include <nlohmann/json.hpp>

namespace kcache::json {
namespace {

// A SAX consumer that accepts everything and records the first error.
class ErrorLocator final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    failed = true;
    this->position = position;
    reason = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line
    // 1, column 5: " prefix: we report a byte offset instead.
    if (auto colon = reason.find(": "); colon != std::string::npos) reason.erase(0, colon + 2);
    return false;
  }

  bool failed = false;
  size_t position = 0;
  std::string reason;
};

}  // namespace

Status DescribeJsonError(std::string_view text, size_t base_offset) {
  ErrorLocator locator;
  nlohmann::json::sax_parse(text.begin(), text.end(), &locator);
  if (!locator.failed) return Status::OK();
  // nlohmann counts the byte it failed on as consumed: report that byte.
  size_t at = locator.position > 0 ? locator.position - 1 : 0;
  return Status::InvalidArgument("malformed JSON at byte " + std::to_string(base_offset + at) +
                                 ": " + locator.reason);
}

}  // namespace kcache::json
