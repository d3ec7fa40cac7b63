// MethodIdTable: zlib's CRC-32 of the path, collisions and the reserved
// range refused with both names.
#include "protoc/method_ids.h"

#include <gtest/gtest.h>

#include "wharf/endpoint.h"

namespace wharf::protoc {
namespace {

TEST(MethodIdsTest, AnIdIsTheCrc32OfThePath) {
  EXPECT_EQ(MethodIdOf("123456789"), 0xCBF43926u);  // the CRC-32 check value
  EXPECT_EQ(MethodIdOf(""), 0u);
  MethodIdTable table;
  Result<uint32_t> id = table.Add("/kv.Store/Get");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, MethodIdOf("/kv.Store/Get"));
  EXPECT_NE(*table.Add("/kv.Store/Put"), *id);
  EXPECT_EQ(table.size(), 2u);
}

TEST(MethodIdsTest, TwoPathsWithOneIdAreRefusedByName) {
  // Found by search: these two share 0x16585540.
  ASSERT_EQ(MethodIdOf("/wharf.test.Collide/M29685295"), MethodIdOf("/wharf.test.Collide/M32060020"));
  MethodIdTable table;
  ASSERT_TRUE(table.Add("/wharf.test.Collide/M29685295").ok());
  Result<uint32_t> second = table.Add("/wharf.test.Collide/M32060020");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(second.status().message().find("/wharf.test.Collide/M29685295"), std::string::npos);
  EXPECT_NE(second.status().message().find("0x16585540"), std::string::npos);
  EXPECT_EQ(table.size(), 1u);
}

TEST(MethodIdsTest, AddingAPathTwiceIsACollision) {
  MethodIdTable table;
  ASSERT_TRUE(table.Add("/kv.Store/Get").ok());
  EXPECT_FALSE(table.Add("/kv.Store/Get").ok());
}

TEST(MethodIdsTest, AnIdInTheReservedRangeIsRefused) {
  ASSERT_GE(MethodIdOf("/wharf.test.Reserved/R55684"), kFirstReservedMethod);
  MethodIdTable table;
  Result<uint32_t> id = table.Add("/wharf.test.Reserved/R55684");
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("reserves"), std::string::npos) << id.status();
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
}  // namespace wharf::protoc
