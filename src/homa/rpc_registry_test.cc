// Unit tests of RpcRegistry: making, finding and freeing client and server
// RPCs, the list of all of them, the counts, the ack floor, and recycling.
// No packets: the registry sends none.
#include "homa/rpc_registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wharf::homa {
namespace {

// Two fake endpoints: the registry only stores and compares their pointers.
HomaEndpoint* const kEpA = reinterpret_cast<HomaEndpoint*>(uintptr_t{0x1000});
HomaEndpoint* const kEpB = reinterpret_cast<HomaEndpoint*>(uintptr_t{0x2000});
constexpr uint16_t kA = 1;
constexpr uint16_t kB = 2;
constexpr uint16_t kServer = 0;

// The list of all live RPCs, oldest first: "c100 s201 ..." (c: client,
// s: server, then the id).
std::string List(const RpcRegistry& rpcs) {
  std::string out;
  for (const Rpc* rpc = rpcs.oldest(); rpc != nullptr; rpc = rpc->newer) {
    if (!out.empty()) out += ' ';
    out += (rpc->is_client() ? "c" : "s") + std::to_string(rpc->id);
  }
  return out;
}

TEST(RpcRegistry, NewClientRpc__IdsAreEvenAndRiseByTwoOverAllEndpoints) {
  RpcRegistry rpcs(100);
  Peer peer;
  Rpc& first = rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  Rpc& second = rpcs.NewClientRpc(kEpB, kB, peer, kServer);
  EXPECT_EQ(first.id, 100u);
  EXPECT_EQ(second.id, 102u);
  EXPECT_EQ(first.state, RpcState::kClientSending);
  EXPECT_EQ(first.endpoint, kEpA);
  EXPECT_EQ(first.local_port, kA);
  EXPECT_EQ(second.local_port, kB);
  EXPECT_EQ(first.peer_port, kServer);
  EXPECT_LT(first.handle, second.handle);
  EXPECT_EQ(peer.live_rpcs, 2u);
  EXPECT_EQ(rpcs.num_client_rpcs(), 2u);
  EXPECT_EQ(List(rpcs), "c100 c102");
}

TEST(RpcRegistry, FindClient__FindsLiveRpcsOfEveryEndpoint) {
  RpcRegistry rpcs(100);
  Peer peer;
  Rpc& a = rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  Rpc& b = rpcs.NewClientRpc(kEpB, kB, peer, kServer);
  EXPECT_EQ(rpcs.FindClient(100), &a);
  EXPECT_EQ(rpcs.FindClient(102), &b);
  EXPECT_EQ(rpcs.FindClient(104), nullptr);
  rpcs.EraseClient(a);
  EXPECT_EQ(rpcs.FindClient(100), nullptr);
  EXPECT_EQ(rpcs.FindClient(102), &b);
}

TEST(RpcRegistry, EraseClient__UnlinksOnlyThatRpc) {
  RpcRegistry rpcs(100);
  Peer peer;
  rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  Rpc& middle = rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  rpcs.EraseClient(middle);
  EXPECT_EQ(List(rpcs), "c100 c104");
  EXPECT_EQ(rpcs.num_live(), 2u);
  EXPECT_EQ(peer.live_rpcs, 2u);
}

TEST(RpcRegistry, ClientFloor__IsTheOldestUnfinishedIdOfThatPairOfEndpoints) {
  RpcRegistry rpcs(100);
  Peer peer;
  Rpc& a1 = rpcs.NewClientRpc(kEpA, kA, peer, kServer);  // 100
  rpcs.NewClientRpc(kEpB, kB, peer, kServer);            // 102: another client endpoint
  Rpc& a2 = rpcs.NewClientRpc(kEpA, kA, peer, kServer);  // 104
  EXPECT_EQ(rpcs.ClientFloor(peer, kA, kServer), 100u);
  EXPECT_EQ(rpcs.ClientFloor(peer, kB, kServer), 102u);
  rpcs.EraseClient(a1);
  EXPECT_EQ(rpcs.ClientFloor(peer, kA, kServer), 104u);
  rpcs.EraseClient(a2);
  // Nothing unfinished: every id so far is finished.
  EXPECT_EQ(rpcs.ClientFloor(peer, kA, kServer), 106u);
  EXPECT_EQ(rpcs.ClientFloor(peer, kA, /*server_port=*/9), 106u);
}

TEST(RpcRegistry, NewServerRpc__IsHeldByItsClientsRecord) {
  RpcRegistry rpcs(100);
  Peer peer;
  ClientRecord& record = peer.clients[EndpointPair(kServer, 7)];
  Rpc& rpc = rpcs.NewServerRpc(kEpA, kServer, peer, record, /*client_port=*/7, /*client_id=*/40,
                               RpcState::kServerReceiving);
  EXPECT_EQ(rpc.id, 41u);
  EXPECT_EQ(rpc.client_id(), 40u);
  EXPECT_FALSE(rpc.is_client());
  EXPECT_EQ(rpc.peer_port, 7);
  EXPECT_EQ(record.Find(40), &rpc);
  EXPECT_EQ(rpcs.FindClient(41), nullptr);
  EXPECT_EQ(rpcs.num_server_rpcs(), 1u);
  EXPECT_EQ(rpcs.num_client_rpcs(), 0u);
  EXPECT_EQ(List(rpcs), "s41");
}

TEST(RpcRegistry, EraseServer__FreesItFromItsRecord) {
  RpcRegistry rpcs(100);
  Peer peer;
  ClientRecord& record = peer.clients[EndpointPair(kServer, 7)];
  rpcs.NewServerRpc(kEpA, kServer, peer, record, 7, 40, RpcState::kServerReceiving);
  rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  rpcs.NewServerRpc(kEpA, kServer, peer, record, 7, 42, RpcState::kServerReceiving);
  rpcs.EraseServer(record, record.live.find(40));
  EXPECT_EQ(record.Find(40), nullptr);
  EXPECT_NE(record.Find(42), nullptr);
  EXPECT_EQ(List(rpcs), "c100 s43");
  EXPECT_EQ(rpcs.num_server_rpcs(), 1u);
  EXPECT_EQ(peer.live_rpcs, 2u);
}

TEST(RpcRegistry, EraseServer__ARecycledRpcStartsAfresh) {
  RpcRegistry rpcs(100);
  Peer peer;
  ClientRecord& record = peer.clients[EndpointPair(kServer, 7)];
  Rpc& old = rpcs.NewServerRpc(kEpA, kServer, peer, record, 7, 40, RpcState::kServerReceiving);
  old.silent_ticks = 9;
  old.restarts = 3;
  old.cookie = 77;
  const uint64_t old_handle = old.handle;
  rpcs.EraseServer(record, record.live.find(40));
  Rpc& fresh = rpcs.NewClientRpc(kEpB, kB, peer, kServer);
  EXPECT_EQ(fresh.silent_ticks, 0);
  EXPECT_EQ(fresh.restarts, 0);
  EXPECT_EQ(fresh.cookie, 0u);
  EXPECT_FALSE(fresh.in);
  EXPECT_GT(fresh.handle, old_handle) << "handles are never reused";
}

TEST(RpcRegistry, MarkAwaitingAck__LeavesTheUnansweredWindow) {
  RpcRegistry rpcs(100);
  Peer peer;
  ClientRecord& record = peer.clients[EndpointPair(kServer, 7)];
  Rpc& rpc = rpcs.NewServerRpc(kEpA, kServer, peer, record, 7, 40, RpcState::kServerSending);
  rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  EXPECT_EQ(rpcs.unanswered(), 2u);
  rpcs.MarkAwaitingAck(rpc);
  EXPECT_EQ(rpc.state, RpcState::kServerAwaitAck);
  EXPECT_EQ(rpcs.unanswered(), 1u);
  EXPECT_EQ(rpcs.num_live(), 2u);
  rpcs.EraseServer(record, record.live.find(40));
  EXPECT_EQ(rpcs.unanswered(), 1u);
}

TEST(RpcRegistry, StartPeakWindow__ThePeakCoversThisWindowAndTheOneBefore) {
  RpcRegistry rpcs(100);
  Peer peer;
  std::vector<Rpc*> made;
  for (int i = 0; i < 10; ++i) made.push_back(&rpcs.NewClientRpc(kEpA, kA, peer, kServer));
  for (Rpc* rpc : made) rpcs.EraseClient(*rpc);
  EXPECT_EQ(rpcs.recent_unanswered_peak(), 10u);
  rpcs.StartPeakWindow();
  rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  EXPECT_EQ(rpcs.recent_unanswered_peak(), 10u) << "the window before still counts";
  rpcs.StartPeakWindow();
  EXPECT_EQ(rpcs.recent_unanswered_peak(), 1u);
}

TEST(RpcRegistry, CountOf__CountsTheRpcsOfOneEndpoint) {
  RpcRegistry rpcs(100);
  Peer peer;
  ClientRecord& record = peer.clients[EndpointPair(kA, 7)];
  rpcs.NewClientRpc(kEpA, kA, peer, kServer);
  rpcs.NewClientRpc(kEpB, kB, peer, kServer);
  rpcs.NewServerRpc(kEpA, kA, peer, record, 7, 40, RpcState::kServerReceiving);
  rpcs.NewServerRpc(kEpA, kA, peer, record, 7, 42, RpcState::kServerReceiving);
  const RpcRegistry::Counts a = rpcs.CountOf(kEpA);
  const RpcRegistry::Counts b = rpcs.CountOf(kEpB);
  EXPECT_EQ(a.client, 1u);
  EXPECT_EQ(a.server, 2u);
  EXPECT_EQ(b.client, 1u);
  EXPECT_EQ(b.server, 0u);
}

}  // namespace
}  // namespace wharf::homa
