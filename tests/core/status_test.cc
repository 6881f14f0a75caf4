// SPDX-License-Identifier: Apache-2.0

#include "kcache/status.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "kcache/status_or.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_OK(s);
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = Status::NotFound("pods \"a\" not found");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_EQ(s.ToString(), "NotFound: pods \"a\" not found");
  Status copy = s;
  EXPECT_EQ(copy, s);
  EXPECT_EQ(s.WithContext("lister").message(), "lister: pods \"a\" not found");
  EXPECT_OK(Status().WithContext("x"));
}

TEST(StatusTest, EveryCodeHasAFactory) {
  const std::vector<std::pair<Status, StatusCode>> made = {
      {Status::Cancelled("m"), StatusCode::kCancelled},
      {Status::InvalidArgument("m"), StatusCode::kInvalidArgument},
      {Status::NotFound("m"), StatusCode::kNotFound},
      {Status::AlreadyExists("m"), StatusCode::kAlreadyExists},
      {Status::PermissionDenied("m"), StatusCode::kPermissionDenied},
      {Status::Unauthenticated("m"), StatusCode::kUnauthenticated},
      {Status::ResourceExhausted("m"), StatusCode::kResourceExhausted},
      {Status::FailedPrecondition("m"), StatusCode::kFailedPrecondition},
      {Status::Aborted("m"), StatusCode::kAborted},
      {Status::Expired("m"), StatusCode::kExpired},
      {Status::Unimplemented("m"), StatusCode::kUnimplemented},
      {Status::Internal("m"), StatusCode::kInternal},
      {Status::Unavailable("m"), StatusCode::kUnavailable},
      {Status::DeadlineExceeded("m"), StatusCode::kDeadlineExceeded},
      {Status::Corruption("m"), StatusCode::kCorruption},
      {Status::IOError("m"), StatusCode::kIOError},
      {Status::Busy("m"), StatusCode::kBusy},
  };
  ASSERT_EQ(made.size(), static_cast<size_t>(StatusCode::kBusy));
  for (const auto& [s, code] : made) {
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_EQ(s.message(), "m");
  }
  EXPECT_TRUE(Status::Aborted("m").IsConflict());
  EXPECT_TRUE(Status::AlreadyExists("m").IsAlreadyExists());
  EXPECT_FALSE(Status::AlreadyExists("m").IsConflict());
}

Status FailIfNegative(int v) { return v < 0 ? Status::InvalidArgument("negative") : Status::OK(); }

Status Chain(int v) {
  KCACHE_RETURN_IF_ERROR(FailIfNegative(v));
  return Status::OK();
}

StatusOr<int> Half(int v) {
  if (v % 2) return Status::InvalidArgument("odd");
  return v / 2;
}

StatusOr<int> Quarter(int v) {
  KCACHE_ASSIGN_OR_RETURN(int h, Half(v));
  return Half(h);
}

TEST(StatusTest, MacrosPropagate) {
  EXPECT_OK(Chain(1));
  EXPECT_TRUE(Chain(-1).IsInvalidArgument());
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");
  EXPECT_EQ(Quarter(5).status().message(), "odd");
}

TEST(StatusOrTest, OkStatusBecomesInternalError) {
  StatusOr<int> v = Status::OK();
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
  EXPECT_EQ(v.value_or(7), 7);
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> v = Status::NotFound("x");
  EXPECT_DEATH({ (void)v.value(); }, "");
}

}  // namespace
}  // namespace kcache

namespace kcache {
namespace {

using ::kcache::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(StatusMatchersTest, StatusIsChecksCodeAndMessage) {
  EXPECT_THAT(Status::NotFound("pods \"a\" not found"), StatusIs(StatusCode::kNotFound));
  EXPECT_THAT(Status::NotFound("pods \"a\" not found"),
              StatusIs(StatusCode::kNotFound, HasSubstr("\"a\"")));
  EXPECT_THAT(Status::NotFound("x"), Not(StatusIs(StatusCode::kExpired)));
  EXPECT_THAT(StatusOr<int>(Status::Expired("too old")), StatusIs(StatusCode::kExpired));
  EXPECT_THAT(StatusOr<int>(4), Not(StatusIs(StatusCode::kExpired)));
}

TEST(StatusMatchersTest, FailingOkCheckPrintsTheStatus) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Status::Corruption("block 3 at byte 812: bad checksum")),
                          "Corruption: block 3 at byte 812: bad checksum");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(StatusOr<int>(Status::Busy("cache is locked"))),
                          "Busy: cache is locked");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(Status::NotFound("gone"), StatusIs(StatusCode::kExpired)),
                          "NotFound");
}

}  // namespace
}  // namespace kcache
