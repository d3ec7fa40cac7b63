#include "transport/fake/fake_network.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/sim_clock.h"
#include "wire/packet.h"

namespace wharf::transport::fake {
namespace {

std::span<const std::byte> AsBytes(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

std::string AsText(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Three hosts whose packets are plain text ("DATA 1400@0"), so that the log
// reads like a protocol log without depending on the wire codec.
class FakeNetworkTest : public ::testing::Test {
 protected:
  FakeNetworkTest() : net_(clock_, 1) {
    net_.SetDescriber(DescribeBytesAsText);
    a_ = net_.Attach("A", addr_a_);
    b_ = net_.Attach("B", addr_b_);
    c_ = net_.Attach("C", addr_c_);
  }

  void Send(FakeDatagram& from, NetAddress to, std::string_view text) {
    OutDatagram d{to, AsBytes(text)};
    Result<size_t> sent = from.Send(std::span<const OutDatagram>(&d, 1));
    ASSERT_TRUE(sent.ok()) << sent.status();
  }

  // Everything in `endpoint`'s inbox, as text.
  std::vector<std::string> Drain(FakeDatagram& endpoint) {
    std::vector<std::string> out;
    std::vector<InDatagram> in(8);
    for (;;) {
      Result<size_t> n = endpoint.Receive(in);
      if (!n.ok() || *n == 0) return out;
      for (size_t i = 0; i < *n; ++i) out.push_back(AsText(in[i].bytes));
    }
  }

  void RunUntilIdle() {
    while (clock_.RunNext()) {
    }
  }

  SimClock clock_;
  FakeNetwork net_;
  NetAddress addr_a_ = NetAddress::Ipv4(0x0a000001, 4000);
  NetAddress addr_b_ = NetAddress::Ipv4(0x0a000002, 4000);
  NetAddress addr_c_ = NetAddress::Ipv4(0x0a000003, 4000);
  std::unique_ptr<FakeDatagram> a_, b_, c_;
};

TEST_F(FakeNetworkTest, DeliversAtExactlyTheDelay) {
  LinkConfig config;
  config.delay_ns = 5 * kNsPerUs;
  net_.SetLink("A", "B", config);
  clock_.AdvanceTo(1000);
  Send(*a_, addr_b_, "hello");
  EXPECT_EQ(net_.InFlight(), 1u);
  EXPECT_EQ(clock_.NextDeadline(), 1000 + 5 * kNsPerUs);
  clock_.AdvanceTo(1000 + 5 * kNsPerUs - 1);
  EXPECT_EQ(b_->pending(), 0u);
  clock_.AdvanceTo(1000 + 5 * kNsPerUs);
  EXPECT_EQ(Drain(*b_), (std::vector<std::string>{"hello"}));
  EXPECT_EQ(net_.InFlight(), 0u);
}

TEST_F(FakeNetworkTest, GatheredDatagramTravelsJoinedAndIsLoggedWhole) {
  std::string_view header = "DATA ";
  std::string_view payload = "1400@0";
  OutDatagram d{addr_b_, AsBytes(header), 0, AsBytes(payload)};
  ASSERT_TRUE(a_->Send(std::span<const OutDatagram>(&d, 1)).ok());
  RunUntilIdle();
  EXPECT_EQ(Drain(*b_), (std::vector<std::string>{"DATA 1400@0"}));
  EXPECT_EQ(net_.Log(), "A->B DATA 1400@0");
}

TEST_F(FakeNetworkTest, GatheredDatagramOverTheLimitIsRejectedWhole) {
  net_.SetMaxDatagramBytes(10);
  OutDatagram d{addr_b_, AsBytes("123456"), 0, AsBytes("7890X")};
  Result<size_t> sent = a_->Send(std::span<const OutDatagram>(&d, 1));
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(net_.InFlight(), 0u);
}

TEST_F(FakeNetworkTest, LinksArePerDirection) {
  LinkConfig slow;
  slow.delay_ns = 100;
  LinkConfig fast;
  fast.delay_ns = 10;
  net_.SetLink("A", "B", slow);
  net_.SetLink("B", "A", fast);
  Send(*a_, addr_b_, "ab");
  Send(*b_, addr_a_, "ba");
  clock_.AdvanceTo(10);
  EXPECT_EQ(Drain(*a_), (std::vector<std::string>{"ba"}));
  EXPECT_EQ(b_->pending(), 0u);
  clock_.AdvanceTo(100);
  EXPECT_EQ(Drain(*b_), (std::vector<std::string>{"ab"}));
  net_.SetLinkBothWays("A", "C", fast);
  EXPECT_EQ(net_.Link("C", "A").delay_ns, 10);
}

TEST_F(FakeNetworkTest, BandwidthSerialisesPacketsFifo) {
  LinkConfig config;
  config.delay_ns = 1000;
  config.bandwidth_bps = 8'000'000'000;  // 1 byte per ns
  net_.SetDefaultLink(config);
  std::string big(1000, 'x');
  std::vector<std::pair<std::string, TimeNs>> arrivals;
  Send(*a_, addr_b_, big);           // leaves at 1000, arrives 2000
  Send(*a_, addr_b_, "tiny");        // queued behind: leaves 1004, arrives 2004
  Send(*c_, addr_b_, "other link");  // not queued: 10 ns + 1000
  while (clock_.RunNext()) {
    for (const std::string& text : Drain(*b_)) {
      arrivals.emplace_back(text.size() > 20 ? "big" : text, clock_.NowNs());
    }
  }
  EXPECT_EQ(arrivals, (std::vector<std::pair<std::string, TimeNs>>{
                          {"other link", 1010}, {"big", 2000}, {"tiny", 2004}}));
  // Once the queue drained, the next packet waits only for itself.
  TimeNs now = clock_.NowNs();
  Send(*a_, addr_b_, "late");
  EXPECT_EQ(clock_.NextDeadline(), now + 4 + 1000);
}

TEST_F(FakeNetworkTest, FaultRatesMatchProbabilities) {
  LinkConfig config;
  config.drop_probability = 0.1;
  config.duplicate_probability = 0.05;
  config.reorder_probability = 0.1;
  config.reorder_extra_delay_ns = 3 * kNsPerUs;
  net_.SetLink("A", "B", config);
  constexpr int kPackets = 10000;
  for (int i = 0; i < kPackets; ++i) {
    Send(*a_, addr_b_, "p" + std::to_string(i));
    clock_.AdvanceBy(100);  // sends spaced by less than the reorder delay
  }
  RunUntilIdle();
  LinkCounters c = net_.Counters("A", "B");
  EXPECT_EQ(c.sent, static_cast<uint64_t>(kPackets));
  // Expected 1000 / ~450 / ~900; bounds are about 5 standard deviations.
  EXPECT_NEAR(static_cast<double>(c.dropped), 1000, 150);
  EXPECT_NEAR(static_cast<double>(c.duplicated), 450, 110);
  EXPECT_NEAR(static_cast<double>(c.delayed), 900, 150);
  EXPECT_EQ(c.sent + c.duplicated, c.delivered + c.dropped);
  std::vector<std::string> got = Drain(*b_);
  EXPECT_EQ(got.size(), c.delivered);
  // Reordering happened: some packet arrived after a later-sent one.
  int inversions = 0;
  for (size_t i = 1; i < got.size(); ++i) {
    inversions += std::stoi(got[i].substr(1)) < std::stoi(got[i - 1].substr(1));
  }
  EXPECT_GT(inversions, 0);
}

// Runs a lossy, duplicating, reordering exchange and returns its log.
std::string LossyRun(uint64_t seed) {
  SimClock clock;
  FakeNetwork net(clock, seed);
  net.SetDescriber(DescribeBytesAsText);
  LinkConfig config;
  config.drop_probability = 0.2;
  config.duplicate_probability = 0.1;
  config.reorder_probability = 0.2;
  config.bandwidth_bps = 1'000'000'000;
  net.SetDefaultLink(config);
  auto a = net.Attach("A", NetAddress::Ipv4(1, 1));
  auto b = net.Attach("B", NetAddress::Ipv4(2, 1));
  std::vector<InDatagram> in(8);
  for (int i = 0; i < 200; ++i) {
    std::string text = "DATA " + std::to_string(i);
    OutDatagram d{b->LocalAddress(), AsBytes(text)};
    if (!a->Send(std::span<const OutDatagram>(&d, 1)).ok()) return "send failed";
    clock.AdvanceBy(500);
    // B answers every packet it got with a grant.
    for (size_t n = *b->Receive(in); n > 0; n = *b->Receive(in)) {
      for (size_t k = 0; k < n; ++k) {
        std::string grant = "GRANT " + AsText(in[k].bytes).substr(5);
        OutDatagram g{a->LocalAddress(), AsBytes(grant)};
        if (!b->Send(std::span<const OutDatagram>(&g, 1)).ok()) return "send failed";
      }
    }
  }
  while (clock.RunNext()) {
  }
  return net.Log("\n");
}

TEST(FakeNetworkDeterminismTest, SameSeedGivesTheIdenticalLog) {
  std::string first = LossyRun(1234);
  EXPECT_EQ(first, LossyRun(1234));
  EXPECT_NE(first, LossyRun(1235));
  // The run exercised every fate.
  for (const char* tag : {"[dropped]", "[dup]", "[delayed]"}) {
    EXPECT_NE(first.find(tag), std::string::npos) << tag;
  }
}

TEST_F(FakeNetworkTest, PartitionDropsBothDirectionsUntilHealed) {
  net_.Partition("A", "B");
  EXPECT_TRUE(net_.IsPartitioned("B", "A"));
  Send(*a_, addr_b_, "ab");
  Send(*b_, addr_a_, "ba");
  Send(*a_, addr_c_, "ac");  // other pairs unaffected
  RunUntilIdle();
  EXPECT_EQ(b_->pending() + a_->pending(), 0u);
  EXPECT_EQ(Drain(*c_), (std::vector<std::string>{"ac"}));
  EXPECT_EQ(net_.Counters("A", "B").partitioned, 1u);
  EXPECT_EQ(net_.Counters("B", "A").dropped, 1u);

  net_.Heal("B", "A");
  EXPECT_FALSE(net_.IsPartitioned("A", "B"));
  Send(*a_, addr_b_, "healed");
  RunUntilIdle();
  EXPECT_EQ(Drain(*b_), (std::vector<std::string>{"healed"}));
  EXPECT_EQ(net_.Log(), "A->B ab [partitioned]; B->A ba [partitioned]; A->C ac; A->B healed");
}

TEST_F(FakeNetworkTest, PartitionAlsoLosesPacketsAlreadyInFlight) {
  Send(*a_, addr_b_, "in flight");
  net_.Partition("A", "B");
  RunUntilIdle();
  EXPECT_EQ(b_->pending(), 0u);
  EXPECT_EQ(net_.Log(), "A->B in flight [partitioned]");
  net_.HealAll();
  EXPECT_FALSE(net_.IsPartitioned("A", "B"));
}

TEST_F(FakeNetworkTest, ScriptedDropHitsOnlyTheFirstMatchingPacket) {
  net_.DropNext(DescriptionStartsWith("GRANT"));
  Send(*a_, addr_b_, "DATA 1400@0");
  Send(*b_, addr_a_, "GRANT 2800");
  Send(*b_, addr_a_, "GRANT 4200");
  RunUntilIdle();
  EXPECT_EQ(net_.PendingScriptedFaults(), 0u);
  EXPECT_EQ(Drain(*a_), (std::vector<std::string>{"GRANT 4200"}));
  EXPECT_EQ(Drain(*b_), (std::vector<std::string>{"DATA 1400@0"}));
  EXPECT_EQ(net_.Log(), "A->B DATA 1400@0; B->A GRANT 2800 [dropped]; B->A GRANT 4200");
}

TEST_F(FakeNetworkTest, ScriptedDelayLetsLaterPacketsOvertake) {
  net_.DelayNext(DescriptionStartsWith("DATA 1400@0"), 10 * kNsPerUs);
  Send(*a_, addr_b_, "DATA 1400@0");
  Send(*a_, addr_b_, "DATA 1400@1400");
  RunUntilIdle();
  EXPECT_EQ(Drain(*b_), (std::vector<std::string>{"DATA 1400@1400", "DATA 1400@0"}));
  EXPECT_EQ(net_.Log(), "A->B DATA 1400@0 [delayed]; A->B DATA 1400@1400");
  EXPECT_EQ(net_.Counters("A", "B").delayed, 1u);
}

TEST_F(FakeNetworkTest, ScriptedDuplicateDeliversTwice) {
  net_.DuplicateNext(FlowDescriptionStartsWith("A", "B", "DATA"));
  Send(*a_, addr_b_, "DATA 1400@0");
  Send(*a_, addr_b_, "DATA 1400@1400");
  RunUntilIdle();
  EXPECT_EQ(Drain(*b_), (std::vector<std::string>{"DATA 1400@0", "DATA 1400@0", "DATA 1400@1400"}));
  EXPECT_EQ(net_.Log(), "A->B DATA 1400@0; A->B DATA 1400@0 [dup]; A->B DATA 1400@1400");
  LinkCounters c = net_.Counters("A", "B");
  EXPECT_EQ(c.sent, 2u);
  EXPECT_EQ(c.duplicated, 1u);
  EXPECT_EQ(c.delivered, 3u);
}

TEST_F(FakeNetworkTest, UnknownDestinationIsDroppedAndCounted) {
  NetAddress nowhere = NetAddress::Ipv4(0x0a000009, 4000);
  Send(*a_, nowhere, "DATA 1400@0");
  RunUntilIdle();
  EXPECT_EQ(net_.Log(), "A->10.0.0.9:4000 DATA 1400@0 [no route]");
  LinkCounters c = net_.Counters("A", "10.0.0.9:4000");
  EXPECT_EQ(c.sent, 1u);
  EXPECT_EQ(c.dropped, 1u);
  EXPECT_EQ(c.no_route, 1u);
  EXPECT_EQ(net_.TotalCounters().no_route, 1u);
  EXPECT_EQ(net_.InFlight(), 0u);
}

TEST_F(FakeNetworkTest, SmallScenarioLogIsExact) {
  net_.DropNext(FlowDescriptionStartsWith("A", "B", "DATA 1400@1400"));
  Send(*a_, addr_b_, "DATA 1400@0");
  Send(*a_, addr_b_, "DATA 1400@1400");
  RunUntilIdle();
  ASSERT_EQ(Drain(*b_).size(), 1u);
  Send(*b_, addr_a_, "GRANT 10000");
  Send(*b_, addr_a_, "RESEND 1400@1400");
  RunUntilIdle();
  Send(*a_, addr_b_, "DATA 1400@1400");
  RunUntilIdle();
  EXPECT_EQ(net_.Log(),
            "A->B DATA 1400@0; A->B DATA 1400@1400 [dropped]; B->A GRANT 10000; "
            "B->A RESEND 1400@1400; A->B DATA 1400@1400");
  EXPECT_EQ(net_.LogLines().size(), 5u);
  EXPECT_EQ(net_.Log(" | ").substr(0, 20), "A->B DATA 1400@0 | A");

  net_.ClearLog();
  net_.SetLogFilter(DescriptionStartsWithAnyOf({"DATA", "GRANT"}));
  Send(*b_, addr_a_, "RESEND 0@0");
  Send(*b_, addr_a_, "GRANT 20000");
  Send(*a_, addr_b_, "DATA 1400@2800");
  RunUntilIdle();
  EXPECT_EQ(net_.LogLines(), (std::vector<std::string>{"B->A GRANT 20000", "A->B DATA 1400@2800"}));
  // Counters do not depend on the log filter.
  EXPECT_EQ(net_.Counters("B", "A").sent, 4u);
}

TEST_F(FakeNetworkTest, CountersBalance) {
  LinkConfig config;
  config.drop_probability = 0.3;
  config.duplicate_probability = 0.3;
  net_.SetDefaultLink(config);
  for (int i = 0; i < 100; ++i) {
    Send(*a_, addr_b_, "x");
    Send(*b_, addr_c_, "y");
  }
  LinkCounters mid = net_.TotalCounters();
  EXPECT_EQ(mid.sent + mid.duplicated, mid.delivered + mid.dropped + net_.InFlight());
  RunUntilIdle();
  LinkCounters total = net_.TotalCounters();
  EXPECT_EQ(total.sent, 200u);
  EXPECT_EQ(total.sent + total.duplicated, total.delivered + total.dropped);
  LinkCounters sum = net_.Counters("A", "B");
  sum += net_.Counters("B", "C");
  EXPECT_EQ(sum, total);
  EXPECT_EQ(net_.Counters("C", "A"), LinkCounters{});
}

TEST(FakeNetworkAttachTest, DuplicateAddressAborts) {
  SimClock clock;
  FakeNetwork net(clock, 1);
  auto a = net.Attach("A", NetAddress::Ipv4(1, 1));
  EXPECT_DEATH(net.Attach("B", NetAddress::Ipv4(1, 1)), "already attached to host A");
}

// The default describer is the wire codec's: a scenario with real packets
// logs them as the protocol names them.
TEST(FakeNetworkWireTest, DefaultDescriberLogsRealPackets) {
  SimClock clock;
  FakeNetwork net(clock, 1);
  auto a = net.Attach("A", NetAddress::Ipv4(0x0a000001, 4000));
  auto b = net.Attach("B", NetAddress::Ipv4(0x0a000002, 4000));
  net.DropNext(DescriptionStartsWith("GRANT"));

  std::vector<std::byte> payload(1400, std::byte{0x5a});
  wire::Packet data{{wire::PacketType::kData, 0, 4000, 4000, 2},
                    wire::Data{{10000, 0, 10000, 0, {}, 0}, payload}};
  wire::Packet grant{{wire::PacketType::kGrant, 0, 4000, 4000, 3}, wire::Grant{10000, 0, 0}};
  std::vector<std::byte> data_bytes(a->MaxDatagramBytes());
  std::vector<std::byte> grant_bytes(wire::kGrantBytes);
  Result<size_t> data_len = wire::Encode(data, data_bytes);
  ASSERT_TRUE(data_len.ok()) << data_len.status();
  ASSERT_TRUE(wire::Encode(grant, grant_bytes).ok());

  OutDatagram d{b->LocalAddress(), std::span<const std::byte>(data_bytes).first(*data_len)};
  OutDatagram g{a->LocalAddress(), grant_bytes};
  ASSERT_TRUE(a->Send(std::span<const OutDatagram>(&d, 1)).ok());
  ASSERT_TRUE(b->Send(std::span<const OutDatagram>(&g, 1)).ok());
  ASSERT_TRUE(b->Send(std::span<const OutDatagram>(&g, 1)).ok());
  while (clock.RunNext()) {
  }
  EXPECT_EQ(net.Log(), "A->B DATA 1400@0; B->A GRANT 10000 [dropped]; B->A GRANT 10000");
}

}  // namespace
}  // namespace wharf::transport::fake

namespace wharf::transport::fake {
namespace {

class FakeNetworkPathErrorTest : public FakeNetworkTest {};

TEST_F(FakeNetworkPathErrorTest, NoRouteIsSilentUnlessAskedToReport) {
  const NetAddress nowhere = NetAddress::Ipv4(0x0a000009, 4000);
  std::vector<PathError> out(4);
  Send(*a_, nowhere, "lost");
  RunUntilIdle();
  EXPECT_EQ(a_->TakePathErrors(out), 0u);

  net_.SetReportNoRoute(true);
  Send(*a_, nowhere, "refused");
  ASSERT_EQ(a_->TakePathErrors(out), 1u);
  EXPECT_EQ(out[0].to, nowhere);
  EXPECT_EQ(out[0].kind, PathError::Kind::kPortUnreachable);
  EXPECT_EQ(out[0].reporter, nowhere.WithPort(0));
  EXPECT_EQ(a_->TakePathErrors(out), 0u);

  // A receiver that goes away while a packet is in flight: reported on arrival.
  net_.SetDefaultLink({.delay_ns = 10 * kNsPerUs});
  Send(*a_, addr_b_, "too late");
  b_.reset();
  RunUntilIdle();
  ASSERT_EQ(a_->TakePathErrors(out), 1u);
  EXPECT_EQ(out[0].to, addr_b_);
}

TEST_F(FakeNetworkPathErrorTest, InjectedErrorsComeOutInOrder) {
  PathError first{.to = addr_b_, .kind = PathError::Kind::kHostUnreachable};
  PathError second{.to = addr_c_, .kind = PathError::Kind::kNetUnreachable};
  a_->InjectPathError(first);
  a_->InjectPathError(second);
  std::vector<PathError> out(1);
  ASSERT_EQ(a_->TakePathErrors(out), 1u);
  EXPECT_EQ(out[0].to, addr_b_);
  ASSERT_EQ(a_->TakePathErrors(out), 1u);
  EXPECT_EQ(out[0].to, addr_c_);
  EXPECT_EQ(out[0].kind, PathError::Kind::kNetUnreachable);
}

}  // namespace
}  // namespace wharf::transport::fake
