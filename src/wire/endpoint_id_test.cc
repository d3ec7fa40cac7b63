// Tests of EndpointIdForName against FNV-1a-32 values computed independently.
#include "wire/endpoint_id.h"

#include <gtest/gtest.h>

#include <string>

namespace wharf::wire {
namespace {

TEST(EndpointIdTest, EmptyNameIsTheDefaultEndpoint) {
  EXPECT_EQ(EndpointIdForName(""), kDefaultEndpoint);
}

TEST(EndpointIdTest, FoldsFnv1a32To16Bits) {
  // FNV-1a-32("a") = 0xe40c292c: 0xe40c ^ 0x292c = 0xcd20.
  EXPECT_EQ(EndpointIdForName("a"), 0xcd20);
  // FNV-1a-32("kv") = 0x593d1d94: 0x593d ^ 0x1d94 = 0x44a9.
  EXPECT_EQ(EndpointIdForName("kv"), 0x44a9);
  // FNV-1a-32("foobar") = 0xbf9cf968: 0xbf9c ^ 0xf968 = 0x46f4.
  EXPECT_EQ(EndpointIdForName("foobar"), 0x46f4);
  static_assert(EndpointIdForName("kv") == 0x44a9, "usable at compile time");
}

TEST(EndpointIdTest, NoNameTakesTheDefaultId) {
  // Search a few thousand names for one whose fold is 0; each must map to 1.
  int zero_folds = 0;
  for (int i = 0; i < 200'000; ++i) {
    std::string name = "n" + std::to_string(i);
    uint16_t id = EndpointIdForName(name);
    EXPECT_NE(id, kDefaultEndpoint) << name;
    if (id == 1) ++zero_folds;
  }
  EXPECT_GT(zero_folds, 0);  // some names fold to 0 or 1 and all land on 1
}

}  // namespace
}  // namespace wharf::wire
