// Scenario tests of HomaTransport's normal operation on FakeNetwork + SimClock:
// packet exchanges compared as text, SRPT, grants, overcommit, cutoffs.
// Loss, duplication and timeouts are in handlers_test.cc and timer_test.cc.
#include "homa/homa_transport.h"

#include <gtest/gtest.h>

#include "homa/testing/scenario.h"
#include "transport/fake/packet_predicate.h"

namespace wharf::homa {
namespace {

using sim::Host;
using sim::Scenario;
using transport::fake::DescriptionStartsWithAnyOf;

constexpr DurationNs kSecond = kNsPerSec;

TEST(HomaTransportTest, SmallRpcIsOneDataEachWayThenAck) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  uint64_t id = s.Call("A", "B", 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  const HomaEvent& done = s.host("A").completions.at(id);
  ASSERT_EQ(done.kind, HomaEvent::Kind::kResponse);
  EXPECT_TRUE(Scenario::MatchesPattern(done.message, 100));
  s.RunFor(10 * kNsPerMs);  // let the ack reach the server
  // The ACK carries no entry: its floor (the rpc_id field) covers the RPC.
  EXPECT_EQ(s.net().Log(), "A->B DATA 100@0; B->A DATA 100@0; A->B ACK 0");
  EXPECT_EQ(s.host("B").homa->num_server_rpcs(), 0u);
  EXPECT_EQ(s.host("A").homa->num_client_rpcs(), 0u);
}

TEST(HomaTransportTest, ClientIdsAreEvenAndIncreasing) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  uint64_t a = s.Call("A", "B", 1);
  uint64_t b = s.Call("A", "B", 1);
  EXPECT_EQ(a % 2, 0u);
  EXPECT_EQ(b, a + 2);
}

TEST(HomaTransportTest, ZeroByteRpc) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  uint64_t id = s.Call("A", "B", 0);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  EXPECT_EQ(s.host("A").completions.at(id).message.size(), 0u);
  EXPECT_EQ(s.net().LogLines().at(0), "A->B DATA 0@0");
}

TEST(HomaTransportTest, LargeMessageSendsUnscheduledThenGrantedData) {
  HomaConfig config;
  config.unsched_bytes = 2 * 1424;  // two packets of 1472 - 48 payload
  config.max_incoming_bytes = 4 * 1424;
  Scenario s;
  s.AddHost("A", config);
  s.AddHost("B", config);
  s.net().SetLogFilter(DescriptionStartsWithAnyOf({"DATA", "GRANT"}));
  uint64_t id = s.Call("A", "B", 10 * 1424);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  EXPECT_TRUE(Scenario::MatchesPattern(s.host("A").completions.at(id).message, 10 * 1424));
  auto lines = s.net().LogLines();
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0], "A->B DATA 1424@0");
  EXPECT_EQ(lines[1], "A->B DATA 1424@1424");
  // Both unscheduled packets arrive in one poll; the first grant is received
  // (2 packets) + the window (max_incoming / (1 + 1) = 2 packets).
  EXPECT_EQ(lines[2], "B->A GRANT 5696");
  int grants = 0;
  for (const auto& l : lines) grants += l.starts_with("B->A GRANT");
  EXPECT_GE(grants, 3);
  EXPECT_EQ(s.host("B").homa->stats().grants_sent, static_cast<uint64_t>(grants));
}

TEST(HomaTransportTest, EchoOfEverySizeAroundThePacketBoundary) {
  Scenario s;
  s.AddHost("A");
  s.AddHost("B");
  const size_t payload = 1472 - 48;
  for (size_t size : {size_t{1}, payload - 1, payload, payload + 1, size_t{1} << 20}) {
    uint64_t id = s.Call("A", "B", size);
    ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, 10 * kSecond)) << size;
    EXPECT_TRUE(Scenario::MatchesPattern(s.host("A").completions.at(id).message, size)) << size;
  }
}

TEST(HomaTransportTest, RequestAboveMaxMessageIsRejectedLocally) {
  HomaConfig config;
  config.max_message_bytes = 1000;
  Scenario s;
  s.AddHost("A", config);
  s.AddHost("B", config);
  auto r = s.host("A").homa->SendRequest(s.host("B").address(), Buffer::Allocate(1001));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max_message_bytes"), std::string::npos);
}

TEST(HomaTransportTest, InvalidConfigNamesTheKey) {
  SimClock clock;
  transport::fake::FakeNetwork net(clock, 1);
  auto dg = net.Attach("A", *transport::NetAddress::Parse("198.18.0.1:1"));
  HomaConfig config;
  config.overcommit = 0;
  auto homa = HomaTransport::Create(config, dg.get(), clock);
  ASSERT_FALSE(homa.ok());
  EXPECT_NE(homa.status().message().find("homa.overcommit"), std::string::npos);
}

TEST(HomaTransportTest, ResponseAfterClientWentAwayIsNotFound) {
  Scenario s;
  s.AddHost("A");
  Host& b = s.AddHost("B");
  b.auto_echo = false;
  uint64_t id = s.Call("A", "B", 10);
  ASSERT_TRUE(s.RunUntil([&] { return !b.held_requests.empty(); }, kSecond));
  EXPECT_TRUE(s.host("A").homa->Cancel(id));
  s.RunFor(5 * kNsPerMs);  // the cancel's ack reaches B
  Status st = b.homa->SendResponse(b.held_requests[0].server_key, Buffer::Allocate(5));
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.host("A").completions.empty());
}

TEST(HomaTransportTest, AnsweringTwiceIsRejected) {
  Scenario s;
  s.AddHost("A");
  Host& b = s.AddHost("B");
  b.auto_echo = false;
  s.Call("A", "B", 10);
  ASSERT_TRUE(s.RunUntil([&] { return !b.held_requests.empty(); }, kSecond));
  ServerRpcKey key = b.held_requests[0].server_key;
  EXPECT_TRUE(b.homa->SendResponse(key, Buffer::Allocate(5)).ok());
  EXPECT_EQ(b.homa->SendResponse(key, Buffer::Allocate(5)).code(),
            StatusCode::kFailedPrecondition);
}

TEST(HomaTransportTest, ReceiverGrantsShortestRemainingFirst) {
  HomaConfig config;
  config.unsched_bytes = 1424;
  config.overcommit = 1;  // one message granted at a time makes the order visible
  config.max_nic_backlog_ns = 5 * kNsPerUs;  // a few packets: the grants' order decides
  Scenario s;
  s.AddHost("big", config);
  s.AddHost("small", config);
  s.AddHost("R", config);
  s.net().SetLogFilter(DescriptionStartsWithAnyOf({"GRANT"}));
  uint64_t big = s.Call("big", "R", 200'000);
  uint64_t small = s.Call("small", "R", 20'000);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("small", small); }, kSecond));
  EXPECT_FALSE(s.Completed("big", big));
  auto lines = s.net().LogLines();
  ASSERT_FALSE(lines.empty());
  // Once both are known, R grants only to the small one until it is done.
  int big_grants_before_small_done = 0;
  for (const auto& l : lines) big_grants_before_small_done += l.starts_with("R->big");
  EXPECT_LE(big_grants_before_small_done, 1);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("big", big); }, kSecond));
}

TEST(HomaTransportTest, OvercommitBoundsMessagesGrantedAtOnce) {
  HomaConfig config;
  config.unsched_bytes = 1424;
  config.overcommit = 2;
  config.grant_fifo_permille = 0;
  Scenario s;
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 10'000'000'000;
  s.net().SetDefaultLink(link);
  for (int i = 0; i < 5; ++i) s.AddHost("S" + std::to_string(i), config);
  s.AddHost("R", config);
  std::vector<uint64_t> ids;
  // 2 MB each: far more than one window, so none is fully granted at once.
  for (int i = 0; i < 5; ++i) {
    ids.push_back(s.Call("S" + std::to_string(i), "R", 2'000'000 + i * 1000));
  }
  s.RunFor(100 * kNsPerUs);
  std::set<std::string> granted;
  for (const auto& l : s.net().LogLines()) {
    if (l.find(" GRANT ") != std::string::npos) granted.insert(l.substr(0, l.find(' ')));
  }
  EXPECT_EQ(granted, (std::set<std::string>{"R->S0", "R->S1"}));
  ASSERT_TRUE(s.RunUntil(
      [&] {
        for (int i = 0; i < 5; ++i) {
          if (!s.Completed("S" + std::to_string(i), ids[i])) return false;
        }
        return true;
      },
      10 * kSecond));
}

// GRANTs R sends to the large message during its GRANTs to the stream of
// 40 shorter messages queued right after it (so SRPT always has a shorter one
// to grant). Grant order is the mechanism; FakeNetwork has no shared
// downlink, so completion order would not show starvation.
int GrantsToLargeWhileShortOnesWait(int fifo_permille, uint64_t* fifo_grants) {
  HomaConfig config;
  config.unsched_bytes = 1424;
  config.overcommit = 1;  // one message granted at a time
  // A window well below the short messages' 100 KB, so that each needs
  // several grants and the FIFO share has SRPT grants to be a share of.
  config.max_incoming_bytes = 400'000;
  config.grant_fifo_permille = fifo_permille;
  config.fifo_grant_bytes = 20'000;
  Scenario s;
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 10'000'000'000;
  s.net().SetDefaultLink(link);
  s.AddHost("big", config);
  s.AddHost("small", config);
  Host& r = s.AddHost("R", config);
  s.net().SetLogFilter(DescriptionStartsWithAnyOf({"GRANT"}));
  s.Call("big", "R", 1'000'000);
  for (int i = 0; i < 40; ++i) s.Call("small", "R", 100'000);
  EXPECT_TRUE(s.RunUntil([&] { return r.homa->stats().requests_delivered == 41; }, 10 * kSecond));
  *fifo_grants = r.homa->stats().fifo_grants;
  auto lines = s.net().LogLines();
  // Counted once the short stream is established (kSettle grants after its
  // first): until all their first packets arrived, the large message was
  // sometimes the only candidate and SRPT rightly granted it.
  constexpr size_t kSettle = 10;
  size_t first_small = lines.size(), last_small = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].starts_with("R->small GRANT")) continue;
    first_small = std::min(first_small, i);
    last_small = i;
  }
  // Only grants that raise the offset count: a repeated offset is the
  // per-peer keep-alive, which grants nothing.
  int to_big = 0;
  uint64_t big_offset = 0;
  for (size_t i = 0; i < last_small; ++i) {
    if (!lines[i].starts_with("R->big GRANT")) continue;
    uint64_t offset = std::stoull(lines[i].substr(std::string("R->big GRANT ").size()));
    if (offset > big_offset && i > first_small + kSettle) ++to_big;
    big_offset = std::max(big_offset, offset);
  }
  return to_big;
}

TEST(HomaTransportTest, FifoGrantsKeepAnOldLargeMessageMovingUnderSrpt) {
  uint64_t fifo_grants = 0;
  // SRPT alone: every shorter message is granted first; the large one waits.
  EXPECT_EQ(GrantsToLargeWhileShortOnesWait(0, &fifo_grants), 0);
  EXPECT_EQ(fifo_grants, 0u);
  // A 10% FIFO share (20 KB per 200 KB of SRPT grants) moves it meanwhile.
  EXPECT_GT(GrantsToLargeWhileShortOnesWait(100, &fifo_grants), 5);
  EXPECT_GT(fifo_grants, 5u);
}

TEST(HomaTransportTest, SenderSendsShortestMessageFirst) {
  HomaConfig config;
  config.link_bps = 1'000'000'000;  // slow link: the pacer holds data back
  Scenario s;
  s.AddHost("A", config);
  s.AddHost("B", config);
  s.AddHost("C", config);
  uint64_t big = s.Call("A", "B", 500'000);
  uint64_t small = s.Call("A", "C", 5'000);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", small); }, kSecond));
  EXPECT_FALSE(s.Completed("A", big));
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", big); }, 10 * kSecond));
}

TEST(HomaTransportTest, CutoffsFromReceiverChangeSenderPriorities) {
  HomaConfig sender_config;
  HomaConfig receiver_config;
  receiver_config.cutoff_version = 7;
  receiver_config.unsched_cutoffs = {0, 0, 0, 0, 0, 0, 1'000'000'000, 50};
  Scenario s;
  s.AddHost("A", sender_config);
  s.AddHost("B", receiver_config);
  uint64_t id = s.Call("A", "B", 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id); }, kSecond));
  auto lines = s.net().LogLines();
  EXPECT_NE(std::find(lines.begin(), lines.end(), "B->A CUTOFFS v7"), lines.end());
  EXPECT_EQ(s.host("B").homa->stats().cutoffs_sent, 1u);
  // The next request uses version 7: no further CUTOFFS.
  uint64_t id2 = s.Call("A", "B", 100);
  ASSERT_TRUE(s.RunUntil([&] { return s.Completed("A", id2); }, kSecond));
  EXPECT_EQ(s.host("B").homa->stats().cutoffs_sent, 1u);
}

}  // namespace
}  // namespace wharf::homa
