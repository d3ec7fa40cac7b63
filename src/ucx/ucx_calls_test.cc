// The ucx:// RPC tables: ids, lookups by peer, a peer's failure taking
// exactly its calls, the server table's cap and duplicates.
#include "ucx/ucx_calls.h"

#include <gtest/gtest.h>

namespace wharf::ucx {
namespace {

using transport::NetAddress;
using transport::ServerRpcKey;

TEST(UcxClientCallsTest, CallsAreFoundTakenAndFailedByPeer) {
  UcxClientCalls calls;
  const NetAddress a = *NetAddress::Parse("198.18.0.1:1");
  const uint64_t first = calls.Add(1, 10, a);
  const uint64_t second = calls.Add(2, 20, a);
  const uint64_t third = calls.Add(1, 30, a);
  EXPECT_NE(first, 0u);
  EXPECT_NE(first, second);
  EXPECT_EQ(calls.InFlight(1), 2u);
  ASSERT_NE(calls.Find(second), nullptr);
  EXPECT_EQ(calls.Find(second)->cookie, 20u);
  auto taken = calls.Take(second);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->peer, 2u);
  EXPECT_FALSE(calls.Take(second));
  EXPECT_EQ(calls.InFlight(2), 0u);
  auto failed = calls.TakePeer(1);
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].first, first);
  EXPECT_EQ(failed[1].first, third);
  EXPECT_EQ(calls.size(), 0u);
  EXPECT_TRUE(calls.TakePeer(1).empty());
  EXPECT_GT(calls.Add(1, 0, a), third) << "ids are never reused";
}

TEST(UcxServerCallsTest, TheTableIsCappedAndRefusesDuplicates) {
  UcxServerCalls calls(2);
  const ServerRpcKey k1{*NetAddress::Parse("198.18.0.1:1"), 0, 1};
  const ServerRpcKey k2{*NetAddress::Parse("198.18.0.1:1"), 0, 2};
  const ServerRpcKey k3{*NetAddress::Parse("198.18.0.2:1"), 0, 1};
  EXPECT_EQ(calls.Add(k1, 7), UcxServerCalls::Added::kAdded);
  EXPECT_EQ(calls.Add(k1, 7), UcxServerCalls::Added::kDuplicate);
  EXPECT_EQ(calls.Add(k2, 7), UcxServerCalls::Added::kAdded);
  EXPECT_EQ(calls.Add(k3, 8), UcxServerCalls::Added::kFull);
  EXPECT_EQ(calls.Take(k1), std::optional<UcxPeer>(7));
  EXPECT_FALSE(calls.Take(k1));
  EXPECT_EQ(calls.Add(k3, 8), UcxServerCalls::Added::kAdded);
  EXPECT_EQ(calls.DropPeer(7), 1u);
  EXPECT_FALSE(calls.Take(k2));
  EXPECT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls.DropPeer(7), 0u);
}

}  // namespace
}  // namespace wharf::ucx
