#include "wharf/status.h"

#include <cerrno>

#include <gtest/gtest.h>

#include "wharf/result.h"

namespace wharf {
namespace {

TEST(StatusCodeNameTest, NamesEveryCode) {
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_EQ(StatusCodeName(StatusCode::kUnavailable), "UNAVAILABLE");
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(200)), "UNKNOWN_CODE");
}

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ToStringCarriesCodeAndMessage) {
  Status s = InvalidArgumentError("port 70000 out of range");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: port 70000 out of range");
}

TEST(StatusTest, WithContextPrependsAndKeepsOk) {
  EXPECT_EQ(NotFoundError("no key").WithContext("wharfd.yaml").message(), "wharfd.yaml: no key");
  EXPECT_TRUE(OkStatus().WithContext("anything").ok());
}

TEST(StatusTest, ErrnoMapsToCanonicalCodes) {
  EXPECT_EQ(ErrnoToStatus(ENOMEM, "alloc").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoToStatus(EACCES, "open").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoToStatus(ECONNREFUSED, "connect").code(), StatusCode::kUnavailable);
  EXPECT_NE(ErrnoToStatus(ENOENT, "open /x").message().find("open /x: "), std::string::npos);
}

Status FailsWhen(bool fail) { return fail ? AbortedError("boom") : OkStatus(); }

Status UsesReturnIfError(bool fail, int* reached) {
  WHARF_RETURN_IF_ERROR(FailsWhen(fail));
  ++*reached;
  return OkStatus();
}

TEST(StatusMacroTest, ReturnIfErrorStopsOnError) {
  int reached = 0;
  EXPECT_TRUE(UsesReturnIfError(false, &reached).ok());
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(UsesReturnIfError(true, &reached).code(), StatusCode::kAborted);
  EXPECT_EQ(reached, 1);
}

}  // namespace
}  // namespace wharf
