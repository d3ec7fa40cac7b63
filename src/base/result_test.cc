#include "wharf/result.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace wharf {
namespace {

Result<int> Parse(std::string_view s) {
  if (s.empty()) return InvalidArgumentError("empty");
  return static_cast<int>(s.size());
}

Result<int> Doubled(std::string_view s) {
  WHARF_ASSIGN_OR_RETURN(int n, Parse(s));
  return n * 2;
}

TEST(ResultTest, HoldsValue) {
  Result<int> r = Parse("abc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3);
  EXPECT_TRUE(r.status().ok());
}

TEST(ResultTest, HoldsError) {
  Result<int> r = Parse("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.value_or(-1), -1);
}

TEST(ResultTest, OkStatusBecomesInternalError) {
  Result<int> r = OkStatus();
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(ResultTest, ConvertsFromCompatibleValue) {
  Result<std::string> r = "literal";
  EXPECT_EQ(*r, "literal");
  EXPECT_EQ(r->size(), 7u);
}

TEST(ResultMacroTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*Doubled("ab"), 4);
  EXPECT_EQ(Doubled("").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace wharf
