// TransportSet: transports by scheme on loopback, endpoints sharing a homa
// socket, refusals.
#include "engine/transport_set.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace wharf::engine {
namespace {

class TransportSetTest : public ::testing::Test {
 protected:
  EngineConfig config_;
  TransportSet set_{config_, SystemClock::Get()};
  transport::NetAddress loopback_ = transport::NetAddress::Ipv4(0x7F000001, 0);
};

TEST_F(TransportSetTest, OpensEachSchemeOnLoopback) {
  auto homa = set_.OpenEndpoint("homa", loopback_, 0);
  ASSERT_TRUE(homa.ok()) << homa.status();
  EXPECT_EQ((*homa)->scheme(), "homa");
  EXPECT_NE((*homa)->LocalAddress().port(), 0);
  auto tcp = set_.OpenEndpoint("tcp", loopback_, 0);
  ASSERT_TRUE(tcp.ok()) << tcp.status();
  EXPECT_EQ((*tcp)->scheme(), "tcp");
  EXPECT_NE((*homa)->ReadableFd(), (*tcp)->ReadableFd());
}

TEST_F(TransportSetTest, EndpointsOnOneAddressShareItsSocket) {
  auto first = set_.OpenEndpoint("homa", loopback_, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  const transport::NetAddress bound = (*first)->LocalAddress();
  auto second = set_.OpenEndpoint("homa", bound, 7);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->LocalAddress(), bound);
  EXPECT_EQ((*second)->ReadableFd(), (*first)->ReadableFd());
  // The same id twice is refused; port 0 always means a new socket.
  auto again = set_.OpenEndpoint("homa", bound, 7);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status();
  auto fresh = set_.OpenEndpoint("homa", loopback_, 7);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_NE((*fresh)->LocalAddress(), bound);
}

TEST_F(TransportSetTest, HomaCountersIncludeTheSocketsOwn) {
  auto homa = set_.OpenEndpoint("homa", loopback_, 0);
  ASSERT_TRUE(homa.ok()) << homa.status();
  auto counters = (*homa)->Counters();
  auto has = [&](std::string_view name) {
    return std::any_of(counters.begin(), counters.end(),
                       [&](const auto& c) { return c.first == name; });
  };
  EXPECT_TRUE(has("homa.packets_sent"));
  EXPECT_TRUE(has("udp.sent"));
  EXPECT_TRUE(has("udp.path_errors"));
  EXPECT_TRUE(has("udp.gro_enabled_times"));
  EXPECT_TRUE(has("udp.gro_disabled_times"));
}

TEST_F(TransportSetTest, RefusesWhatItCannotOpen) {
  auto quic = set_.OpenEndpoint("quic", loopback_, 0);
  EXPECT_EQ(quic.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(quic.status().message().find("quic"), std::string::npos);
  auto named_tcp = set_.OpenEndpoint("tcp", loopback_, 5);
  EXPECT_EQ(named_tcp.status().code(), StatusCode::kInvalidArgument);
  // A port another set (another engine) holds is in use.
  auto first = set_.OpenEndpoint("homa", loopback_, 0);
  ASSERT_TRUE(first.ok());
  TransportSet other(config_, SystemClock::Get());
  auto taken = other.OpenEndpoint("homa", (*first)->LocalAddress(), 0);
  EXPECT_FALSE(taken.ok());
}

}  // namespace
}  // namespace wharf::engine
