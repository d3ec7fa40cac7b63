// TransportSet: transports by scheme on loopback, their fds, refusals.
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
  auto homa = set_.Open("homa", loopback_);
  ASSERT_TRUE(homa.ok()) << homa.status();
  EXPECT_EQ((*homa)->scheme(), "homa");
  EXPECT_NE((*homa)->LocalAddress().port(), 0);
  auto tcp = set_.Open("tcp", loopback_);
  ASSERT_TRUE(tcp.ok()) << tcp.status();
  EXPECT_EQ((*tcp)->scheme(), "tcp");
  std::vector<int> fds;
  set_.AppendReadableFds(&fds);
  EXPECT_EQ(fds.size(), 2u);
  EXPECT_TRUE(std::find(fds.begin(), fds.end(), (*homa)->ReadableFd()) != fds.end());
}

TEST_F(TransportSetTest, HomaCountersIncludeTheSocketsOwn) {
  auto homa = set_.Open("homa", loopback_);
  ASSERT_TRUE(homa.ok()) << homa.status();
  auto counters = (*homa)->Counters();
  auto has = [&](std::string_view name) {
    return std::any_of(counters.begin(), counters.end(),
                       [&](const auto& c) { return c.first == name; });
  };
  EXPECT_TRUE(has("homa.packets_sent"));
  EXPECT_TRUE(has("udp.sent"));
  EXPECT_TRUE(has("udp.path_errors"));
}

TEST_F(TransportSetTest, UnknownSchemeIsRefused) {
  auto r = set_.Open("quic", loopback_);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("quic"), std::string::npos);
}

TEST_F(TransportSetTest, PortInUseIsAnError) {
  auto first = set_.Open("homa", loopback_);
  ASSERT_TRUE(first.ok());
  auto second = set_.Open("homa", (*first)->LocalAddress());
  EXPECT_FALSE(second.ok());
}

}  // namespace
}  // namespace wharf::engine
