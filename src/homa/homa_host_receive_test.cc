// Tests of HomaHost placing received messages in memory an endpoint's
// ReceiveAllocator hands out (the application's heap in managed mode), on
// the multi-endpoint World of homa/testing/host_world.h.
#include "homa/homa_host.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "homa/homa_endpoint.h"
#include "homa/testing/host_world.h"
#include "homa/testing/scenario.h"

namespace wharf::homa {
namespace {

using namespace host_world;  // the fixture: World, Inbox, kA, kB, kSecond

// --------------------------------------------- host-placed receives

// Hands out ranges of its own storage until `room` runs out, and records
// what it was asked for and what came back.
class FakeReceiveAllocator final : public transport::ReceiveAllocator {
 public:
  explicit FakeReceiveAllocator(size_t room) : storage_(room) {}
  Buffer AllocateReceive(size_t bytes) override {
    asked.push_back(bytes);
    if (bytes > storage_.size() - used_) return Buffer();
    std::span<std::byte> range(storage_.data() + used_, bytes);
    used_ += bytes;
    return Buffer::Wrap(range, [this](std::span<std::byte> whole) {
      returned.push_back(whole.size());
    });
  }
  bool Holds(const Buffer& b) const {
    return b.data() >= storage_.data() && b.data() < storage_.data() + storage_.size();
  }
  std::vector<size_t> asked, returned;

 private:
  std::vector<std::byte> storage_;
  size_t used_ = 0;
};

TEST(HomaHostTest, MessagesAreReceivedIntoTheEndpointsAllocator) {
  // Declared first: the world's Buffers give their memory back to them.
  FakeReceiveAllocator client_memory(1 << 16), server_memory(1 << 16);
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", wire::kDefaultEndpoint).SetReceiveAllocator(&client_memory);
  w.Open("S", kA).SetReceiveAllocator(&server_memory);
  w.inbox("S", kA).echo = false;
  const uint64_t small = w.Call("C", 0, "S", kA, 100);
  const uint64_t large = w.Call("C", 0, "S", kA, 5000);  // several packets
  Inbox& server = w.inbox("S", kA);
  ASSERT_TRUE(w.RunUntil([&] { return server.held.size() == 2; }, kSecond));
  EXPECT_EQ(server_memory.asked, (std::vector<size_t>{100, 5000}));
  for (HomaEvent& request : server.held) {
    EXPECT_TRUE(server_memory.Holds(request.message));
    const size_t size = request.message.size();
    EXPECT_TRUE(Scenario::MatchesPattern(request.message, size));
    ASSERT_TRUE(w.ep("S", kA).SendResponse(request.server_key, std::move(request.message)).ok());
  }
  server.held.clear();
  EXPECT_TRUE(server_memory.returned.empty()) << "the echo is sent from it until acked";
  Inbox& client = w.inbox("C", 0);
  ASSERT_TRUE(w.RunUntil([&] { return client.done.size() == 2; }, kSecond));
  EXPECT_TRUE(client_memory.Holds(client.done.at(small).message));
  EXPECT_TRUE(client_memory.Holds(client.done.at(large).message));
  EXPECT_TRUE(Scenario::MatchesPattern(client.done.at(small).message, 100));
  EXPECT_TRUE(Scenario::MatchesPattern(client.done.at(large).message, 5000));
  EXPECT_EQ(w.host("C").stats().receives_placed, 2u);
  EXPECT_EQ(w.host("S").stats().receives_placed, 2u);
  w.RunFor(20 * kNsPerMs);  // acks: the server lets go of its answers
  std::sort(server_memory.returned.begin(), server_memory.returned.end());
  EXPECT_EQ(server_memory.returned, (std::vector<size_t>{100, 5000}));
}

TEST(HomaHostTest, AMessageAbandonedHalfWayGivesItsPlacedMemoryBack) {
  FakeReceiveAllocator server_memory(1 << 16);  // outlives the world
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", wire::kDefaultEndpoint);
  w.Open("S", kA).SetReceiveAllocator(&server_memory);
  (void)w.Call("C", 0, "S", kA, 5000);  // several packets
  // The first packet reaches the server; the client is cut off before the
  // rest (a partition also drops what is in flight) and never comes back.
  ASSERT_TRUE(w.RunUntil([&] { return server_memory.asked.size() == 1; }, kSecond));
  w.net().Partition("C", "S");
  EXPECT_EQ(server_memory.asked, std::vector<size_t>{5000});
  EXPECT_TRUE(server_memory.returned.empty()) << "held while the request may still complete";
  // The server gives up on the silent client (seconds, not one missed
  // packet) and frees the half-received request's memory with its RPC.
  ASSERT_TRUE(w.RunUntil([&] { return !server_memory.returned.empty(); }, 60 * kSecond));
  EXPECT_EQ(server_memory.returned, std::vector<size_t>{5000});
  EXPECT_TRUE(w.inbox("S", kA).held.empty());
  EXPECT_EQ(w.host("S").num_server_rpcs(), 0u);
}

TEST(HomaHostTest, AnAllocatorWithoutRoomOrNoneLeavesMessagesInTheHostsMemory) {
  FakeReceiveAllocator full(50);  // less than one 100-byte message; outlives the world
  World w;
  w.AddHost("C");
  w.AddHost("S");
  HomaEndpoint& client_ep = w.Open("C", wire::kDefaultEndpoint);
  client_ep.SetReceiveAllocator(&full);
  w.Open("S", kA);
  const uint64_t first = w.Call("C", 0, "S", kA, 100);
  Inbox& client = w.inbox("C", 0);
  ASSERT_TRUE(w.RunUntil([&] { return client.done.size() == 1; }, kSecond));
  EXPECT_EQ(full.asked, std::vector<size_t>{100});
  EXPECT_TRUE(Scenario::MatchesPattern(client.done.at(first).message, 100));
  client_ep.SetReceiveAllocator(nullptr);
  const uint64_t second = w.Call("C", 0, "S", kA, 40);
  ASSERT_TRUE(w.RunUntil([&] { return client.done.size() == 2; }, kSecond));
  EXPECT_EQ(full.asked.size(), 1u) << "not asked once unset";
  EXPECT_TRUE(Scenario::MatchesPattern(client.done.at(second).message, 40));
  EXPECT_EQ(w.host("C").stats().receives_placed, 0u);
}

}  // namespace
}  // namespace wharf::homa
