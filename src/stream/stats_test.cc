// Tests of CounterList: TcpStats as the "tcp.<name>" counters /metrics shows.
#include "stream/stats.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace wharf::stream {
namespace {

TEST(TcpStatsTest, CounterList__NamesAreUniqueAndPrefixedWithTheScheme) {
  std::set<std::string> names;
  for (const auto& [name, value] : CounterList(TcpStats{})) {
    EXPECT_EQ(name.rfind("tcp.", 0), 0u) << name;
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(value, 0u) << name;
  }
  for (const char* expected :
       {"tcp.connections_opened", "tcp.connections_reset", "tcp.protocol_errors",
        "tcp.requests_delivered", "tcp.responses_delivered", "tcp.duplicate_requests",
        "tcp.reconnects", "tcp.bytes_sent", "tcp.bytes_received"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }
}

TEST(TcpStatsTest, CounterList__EachNameCarriesItsField) {
  TcpStats s;
  s.connections_refused = 3;
  s.batch_cuts = 5;
  s.receive_pool_bytes = 7;
  std::map<std::string, uint64_t> counters;
  for (const auto& [name, value] : CounterList(s)) counters[name] = value;
  EXPECT_EQ(counters.at("tcp.connections_refused"), 3u);
  EXPECT_EQ(counters.at("tcp.batch_cuts"), 5u);
  EXPECT_EQ(counters.at("tcp.receive_pool_bytes"), 7u);
  EXPECT_EQ(counters.at("tcp.peers_refused"), 0u);
}

}  // namespace
}  // namespace wharf::stream
