// SPDX-License-Identifier: Apache-2.0

// gMock matchers for Status and StatusOr<T> that print the status when they
// fail: EXPECT_OK(x), ASSERT_OK(x), and EXPECT_THAT(x, StatusIs(code)) or
// StatusIs(code, HasSubstr("...")).

#ifndef KCACHE_TESTS_TESTING_STATUS_MATCHERS_H_
#define KCACHE_TESTS_TESTING_STATUS_MATCHERS_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "kcache/status.h"
#include "kcache/status_or.h"

namespace kcache {

// How gTest prints a StatusOr: its status, or that it holds a value.
template <typename T>
void PrintTo(const StatusOr<T>& s, std::ostream* os) {
  if (s.ok()) {
    *os << "OK (with a value)";
  } else {
    *os << s.status();
  }
}

inline void PrintTo(StatusCode code, std::ostream* os) { *os << StatusCodeName(code); }

namespace testing {

inline const Status& GetStatus(const Status& s) { return s; }
template <typename T>
const Status& GetStatus(const StatusOr<T>& s) {
  return s.status();
}

class IsOkMatcher {
 public:
  template <typename T>
  bool MatchAndExplain(const T& value, ::testing::MatchResultListener*) const {
    return GetStatus(value).ok();
  }
  void DescribeTo(std::ostream* os) const { *os << "is OK"; }
  void DescribeNegationTo(std::ostream* os) const { *os << "is not OK"; }
};

// Matches an OK Status, or a StatusOr holding a value.
inline ::testing::PolymorphicMatcher<IsOkMatcher> IsOk() {
  return ::testing::MakePolymorphicMatcher(IsOkMatcher());
}

class StatusIsMatcher {
 public:
  StatusIsMatcher(StatusCode code, ::testing::Matcher<const std::string&> message)
      : code_(code), message_(std::move(message)) {}

  template <typename T>
  bool MatchAndExplain(const T& value, ::testing::MatchResultListener* listener) const {
    const Status& st = GetStatus(value);
    if (st.code() != code_) {
      *listener << "whose code is " << StatusCodeName(st.code());
      return false;
    }
    return message_.MatchAndExplain(std::string(st.message()), listener);
  }
  void DescribeTo(std::ostream* os) const {
    *os << "has code " << StatusCodeName(code_) << " and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "does not have code " << StatusCodeName(code_) << " or a message that ";
    message_.DescribeTo(os);
  }

 private:
  StatusCode code_;
  ::testing::Matcher<const std::string&> message_;
};

// Matches a Status (or a StatusOr's status) with `code` and a message that
// `message` matches (anything by default).
inline ::testing::PolymorphicMatcher<StatusIsMatcher> StatusIs(
    StatusCode code, ::testing::Matcher<const std::string&> message = ::testing::_) {
  return ::testing::MakePolymorphicMatcher(StatusIsMatcher(code, std::move(message)));
}

}  // namespace testing
}  // namespace kcache

#define EXPECT_OK(expr) EXPECT_THAT((expr), ::kcache::testing::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::kcache::testing::IsOk())

#endif  // KCACHE_TESTS_TESTING_STATUS_MATCHERS_H_
