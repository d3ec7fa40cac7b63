// Unit tests of EndpointTable: ids to endpoints, and its one-entry cache.
#include "homa/endpoint_table.h"

#include <gtest/gtest.h>

namespace wharf::homa {
namespace {

// The table only stores and compares endpoint pointers.
HomaEndpoint* const kOne = reinterpret_cast<HomaEndpoint*>(uintptr_t{0x1000});
HomaEndpoint* const kTwo = reinterpret_cast<HomaEndpoint*>(uintptr_t{0x2000});

TEST(EndpointTable, Add__RefusesAnIdAlreadyTaken) {
  EndpointTable table;
  EXPECT_TRUE(table.Add(1, kOne));
  EXPECT_FALSE(table.Add(1, kTwo));
  EXPECT_EQ(table.Find(1), kOne);
  EXPECT_EQ(table.size(), 1u);
}

TEST(EndpointTable, Remove__OnlyTheEndpointGiven) {
  EndpointTable table;
  table.Add(1, kOne);
  EXPECT_FALSE(table.Remove(1, kTwo)) << "id 1 is another endpoint's";
  EXPECT_FALSE(table.Remove(2, kOne));
  EXPECT_TRUE(table.Remove(1, kOne));
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.Find(1), nullptr);
  EXPECT_EQ(table.any(), nullptr);
}

TEST(EndpointTable, Find__EveryOpenIdAndNoOther) {
  EndpointTable table;
  table.Add(1, kOne);
  EXPECT_EQ(table.Find(2), nullptr);
  table.Add(2, kTwo);
  EXPECT_EQ(table.Find(1), kOne);
  EXPECT_EQ(table.Find(2), kTwo);
  EXPECT_EQ(table.Find(1), kOne);
  EXPECT_EQ(table.Find(3), nullptr);
  // Removing the endpoint found last leaves the other findable.
  table.Remove(1, kOne);
  EXPECT_EQ(table.Find(1), nullptr);
  EXPECT_EQ(table.Find(2), kTwo);
  EXPECT_EQ(table.any(), kTwo);
}

}  // namespace
}  // namespace wharf::homa
