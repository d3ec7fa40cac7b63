// daemon/peer_handles_test.cc: the application's peer handles and the
// names wharfd gives peers.
#include "daemon/peer_handles.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "shm/commands.h"

namespace wharf::daemon {
namespace {

engine::PeerRef Peer(uint32_t ip) {
  return {0, transport::NetAddress::Ipv4(ip, 4000), 0};
}

engine::PackedUri Packed(const std::string& text) {
  return engine::PackUri(engine::ParseUri(text, "homa", /*resolver=*/nullptr).value());
}

TEST(PeerHandles, Add__AHandleNamesItsUri) {
  PeerHandles peers;
  ASSERT_TRUE(peers.Add(3, Packed("homa://10.0.0.1:4000")).ok());
  const engine::Uri* uri = peers.Find(3);
  ASSERT_NE(uri, nullptr);
  EXPECT_EQ(uri->scheme, "homa");
  EXPECT_EQ(uri->address.ToString(), "10.0.0.1:4000");
  EXPECT_EQ(peers.Find(2), nullptr);  // below, never added
  EXPECT_EQ(peers.Find(4), nullptr);  // past the end
  // Added again: the handle names the new peer.
  ASSERT_TRUE(peers.Add(3, Packed("tcp://10.0.0.2:5000")).ok());
  EXPECT_EQ(peers.Find(3)->scheme, "tcp");
}

TEST(PeerHandles, Add__AHandleOverTheLimitIsRefused) {
  PeerHandles peers;
  Status s = peers.Add(shm::kMaxPeerHandles, Packed("homa://10.0.0.1:4000"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "peer handle 4096 is over 4095");
  EXPECT_EQ(peers.Find(shm::kMaxPeerHandles), nullptr);
}

TEST(PeerHandles, Add__GarbageThatDoesNotUnpackIsRefused) {
  PeerHandles peers;
  EXPECT_FALSE(peers.Add(1, engine::PackedUri{{~0ull, ~0ull, ~0ull}}).ok());
  EXPECT_EQ(peers.Find(1), nullptr);
}

TEST(PeerHandles, NameOf__APeerIsNamedOnce) {
  PeerHandles peers;
  EXPECT_EQ(peers.NameOf(Peer(1)), std::make_pair(uint64_t{1}, true));
  EXPECT_EQ(peers.NameOf(Peer(2)), std::make_pair(uint64_t{2}, true));
  EXPECT_EQ(peers.NameOf(Peer(1)), std::make_pair(uint64_t{1}, false));
  EXPECT_EQ(peers.names(), 2u);
}

TEST(PeerHandles, NameOf__StartsOverWhenFullWithoutReusingIds) {
  PeerHandles peers;
  for (uint32_t i = 0; i < shm::kMaxPeerNames; ++i) peers.NameOf(Peer(i));
  EXPECT_EQ(peers.names(), shm::kMaxPeerNames);
  // A new peer: the table starts over, and the id is a new one.
  EXPECT_EQ(peers.NameOf(Peer(99999)), std::make_pair(shm::kMaxPeerNames + 1, true));
  EXPECT_EQ(peers.names(), 1u);
  EXPECT_EQ(peers.NameOf(Peer(0)), std::make_pair(shm::kMaxPeerNames + 2, true));
}

}  // namespace
}  // namespace wharf::daemon
