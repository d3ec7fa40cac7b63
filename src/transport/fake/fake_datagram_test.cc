#include "transport/fake/fake_datagram.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/sim_clock.h"
#include "transport/fake/fake_network.h"

namespace wharf::transport::fake {
namespace {

std::span<const std::byte> AsBytes(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

std::string AsText(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

class FakeDatagramTest : public ::testing::Test {
 protected:
  FakeDatagramTest() {
    net_.SetDescriber(DescribeBytesAsText);
    a_ = net_.Attach("A", addr_a_);
    b_ = net_.Attach("B", addr_b_);
  }

  void SendText(FakeDatagram& from, NetAddress to, std::string_view text) {
    OutDatagram d{to, AsBytes(text)};
    Result<size_t> sent = from.Send(std::span<const OutDatagram>(&d, 1));
    ASSERT_TRUE(sent.ok()) << sent.status();
    ASSERT_EQ(*sent, 1u);
  }

  SimClock clock_;
  FakeNetwork net_{clock_, 1};
  NetAddress addr_a_ = NetAddress::Ipv4(0x0a000001, 4000);
  NetAddress addr_b_ = NetAddress::Ipv4(0x0a000002, 4000);
  std::unique_ptr<FakeDatagram> a_;
  std::unique_ptr<FakeDatagram> b_;
};

TEST_F(FakeDatagramTest, BasicProperties) {
  EXPECT_EQ(a_->LocalAddress(), addr_a_);
  EXPECT_EQ(a_->host_name(), "A");
  EXPECT_EQ(a_->ReadableFd(), -1);
  EXPECT_EQ(a_->MaxDatagramBytes(), 1472u);
  net_.SetMaxDatagramBytes(9000);
  EXPECT_EQ(a_->MaxDatagramBytes(), 9000u);
}

TEST_F(FakeDatagramTest, ReceiveOnEmptyInboxReturnsZero) {
  std::vector<InDatagram> in(4);
  Result<size_t> n = b_->Receive(in);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
}

TEST_F(FakeDatagramTest, SendBatchArrivesInOrderWithSenderAddress) {
  std::string x = "first", y = "second", z = "third";
  std::vector<OutDatagram> batch = {
      {addr_b_, AsBytes(x)}, {addr_b_, AsBytes(y)}, {addr_b_, AsBytes(z)}};
  Result<size_t> sent = a_->Send(batch);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, 3u);
  clock_.AdvanceBy(net_.Link("A", "B").delay_ns);
  EXPECT_EQ(b_->pending(), 3u);
  std::vector<InDatagram> in(2);
  ASSERT_EQ(*b_->Receive(in), 2u);
  EXPECT_EQ(AsText(in[0].bytes), "first");
  EXPECT_EQ(in[0].from, addr_a_);
  EXPECT_EQ(AsText(in[1].bytes), "second");
  ASSERT_EQ(*b_->Receive(in), 1u);
  EXPECT_EQ(AsText(in[0].bytes), "third");
  EXPECT_EQ(b_->pending(), 0u);
}

TEST_F(FakeDatagramTest, ReceivedViewsStayValidUntilTheNextReceive) {
  SendText(*a_, addr_b_, "one");
  SendText(*a_, addr_b_, "two");
  clock_.AdvanceBy(net_.Link("A", "B").delay_ns);
  std::vector<InDatagram> in(2);
  ASSERT_EQ(*b_->Receive(in), 2u);
  // More packets arriving (the inbox growing) must not disturb the views.
  for (int i = 0; i < 100; ++i) SendText(*a_, addr_b_, "filler " + std::to_string(i));
  clock_.AdvanceBy(net_.Link("A", "B").delay_ns);
  EXPECT_EQ(AsText(in[0].bytes), "one");
  EXPECT_EQ(AsText(in[1].bytes), "two");
  std::vector<InDatagram> next(1);
  ASSERT_EQ(*b_->Receive(next), 1u);
  EXPECT_EQ(AsText(next[0].bytes), "filler 0");
}

TEST_F(FakeDatagramTest, OversizeDatagramRejectsTheWholeBatch) {
  net_.SetMaxDatagramBytes(10);
  std::string ok_text = "0123456789", big = "0123456789a";
  std::vector<OutDatagram> batch = {{addr_b_, AsBytes(ok_text)}, {addr_b_, AsBytes(big)}};
  Result<size_t> sent = a_->Send(batch);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sent.status().message().find("11 bytes"), std::string::npos) << sent.status().message();
  EXPECT_EQ(net_.TotalCounters().sent, 0u);
  EXPECT_EQ(net_.Log(), "");
  // Exactly at the limit is fine.
  SendText(*a_, addr_b_, ok_text);
}

TEST_F(FakeDatagramTest, EmptyDatagramIsDelivered) {
  SendText(*a_, addr_b_, "");
  clock_.AdvanceBy(net_.Link("A", "B").delay_ns);
  std::vector<InDatagram> in(1);
  ASSERT_EQ(*b_->Receive(in), 1u);
  EXPECT_EQ(in[0].bytes.size(), 0u);
}

TEST_F(FakeDatagramTest, DetachedReceiverLosesPacketsInFlight) {
  SendText(*a_, addr_b_, "late");
  b_.reset();
  clock_.AdvanceBy(net_.Link("A", "B").delay_ns);
  EXPECT_EQ(net_.Log(), "A->B late [no route]");
  EXPECT_EQ(net_.Counters("A", "B").no_route, 1u);
  // The address can be attached again afterwards.
  b_ = net_.Attach("B2", addr_b_);
  SendText(*a_, addr_b_, "again");
  clock_.AdvanceBy(net_.Link("A", "B2").delay_ns);
  EXPECT_EQ(b_->pending(), 1u);
}

TEST(FakeDatagramLifetimeTest, EndpointOutlivingTheNetworkFailsCleanly) {
  SimClock clock;
  std::unique_ptr<FakeDatagram> a, b;
  NetAddress addr_b = NetAddress::Ipv4(0x0a000002, 1);
  {
    FakeNetwork net(clock, 1);
    net.SetDescriber(DescribeBytesAsText);
    a = net.Attach("A", NetAddress::Ipv4(0x0a000001, 1));
    b = net.Attach("B", addr_b);
    std::string text = "in flight";
    OutDatagram d{addr_b, AsBytes(text)};
    ASSERT_TRUE(a->Send(std::span<const OutDatagram>(&d, 1)).ok());
  }
  // The network cancelled its delivery timer; the clock lives on safely.
  EXPECT_EQ(clock.PendingTimers(), 0u);
  clock.AdvanceBy(kNsPerSec);
  std::string text = "x";
  OutDatagram d{addr_b, AsBytes(text)};
  Result<size_t> sent = a->Send(std::span<const OutDatagram>(&d, 1));
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(a->MaxDatagramBytes(), 0u);
  std::vector<InDatagram> in(1);
  EXPECT_EQ(*b->Receive(in), 0u);
}

}  // namespace
}  // namespace wharf::transport::fake
