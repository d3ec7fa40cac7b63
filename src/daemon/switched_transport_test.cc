// Unit tests of daemon::SwitchedTransport at the transport interface: two
// endpoints on one HomaHost socket (as in wharfd), each wrapped and
// registered with one LocalSwitch, plus a remote homa endpoint on another
// address of the FakeNetwork. The engines on top are local_switch_test.cc's.
#include "daemon/switched_transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/sim_clock.h"
#include "daemon/local_switch.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_datagram.h"
#include "transport/fake/fake_network.h"

namespace wharf::daemon {
namespace {

using transport::MessageEvent;
using transport::MessageTransport;
using transport::NetAddress;
using transport::ServerRpcKey;
using Kind = MessageEvent::Kind;

uint64_t CounterOf(const MessageTransport& t, std::string_view name) {
  for (const auto& [key, value] : t.Counters()) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

class SwitchedTransportTest : public ::testing::Test {
 protected:
  static constexpr uint16_t kIdA = 11;
  static constexpr uint16_t kIdB = 22;

  SwitchedTransportTest() {
    switch_.AddLocalAddress(host_addr_);
    host_ = *homa::HomaHost::Create(homa::HomaConfig{}, datagram_.get(), clock_);
    remote_ = *homa::HomaTransport::Create(homa::HomaConfig{}, remote_dg_.get(), clock_);
    a_ = Open(kIdA, &homa_a_);
    b_ = Open(kIdB, &homa_b_);
  }

  std::unique_ptr<SwitchedTransport> Open(uint16_t id, std::unique_ptr<homa::HomaEndpoint>* homa,
                                          SwitchLimits limits = SwitchLimits{}) {
    auto ep = host_->OpenEndpoint(id);
    EXPECT_TRUE(ep.ok()) << ep.status().ToString();
    *homa = std::move(ep).value();
    auto t = SwitchedTransport::Create(&switch_, homa->get(), id, limits);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(t).value();
  }

  // Polls `t` once and takes every event it has.
  static std::vector<MessageEvent> Drain(MessageTransport& t) {
    t.Poll();
    std::vector<MessageEvent> out;
    MessageEvent event;
    while (t.PopEvent(&event)) out.push_back(std::move(event));
    return out;
  }

  // Runs the remote and the local socket until `done` (simulated time).
  bool RunUntil(const std::function<bool()>& done) {
    for (int step = 0; step < 10'000; ++step) {
      for (MessageTransport* t : {static_cast<MessageTransport*>(a_.get()),
                                  static_cast<MessageTransport*>(b_.get()),
                                  static_cast<MessageTransport*>(remote_.get())}) {
        if (t == nullptr) continue;
        t->Poll();
        MessageEvent event;
        while (t->PopEvent(&event)) {
          if (t == remote_.get() && event.kind == Kind::kRequest) {
            EXPECT_TRUE(remote_->SendResponse(event.server_key, std::move(event.message)).ok());
          } else {
            collected_.push_back(std::move(event));
          }
        }
      }
      if (done()) return true;
      TimeNs next = std::min({clock_.NextDeadline(), remote_->NextDeadline(),
                              homa_a_->NextDeadline()});
      clock_.AdvanceTo(std::max(next, clock_.NowNs() + 1));
    }
    return false;
  }

  NetAddress remote_addr_ = NetAddress::Ipv4(0xC6120002, 4000);  // 198.18.0.2
  NetAddress host_addr_ = NetAddress::Ipv4(0xC6120001, 4000);    // 198.18.0.1
  // Declared in the order they may be destroyed last first.
  SimClock clock_{0};
  transport::fake::FakeNetwork net_{clock_, /*seed=*/1};
  LocalSwitch switch_{clock_};
  std::unique_ptr<transport::fake::FakeDatagram> datagram_ = net_.Attach("H", host_addr_);
  std::unique_ptr<transport::fake::FakeDatagram> remote_dg_ = net_.Attach("R", remote_addr_);
  std::unique_ptr<homa::HomaHost> host_;
  std::unique_ptr<homa::HomaTransport> remote_;
  std::unique_ptr<homa::HomaEndpoint> homa_a_, homa_b_;
  std::unique_ptr<SwitchedTransport> a_, b_;
  std::vector<MessageEvent> collected_;  // RunUntil's events of a_ and b_
};

TEST_F(SwitchedTransportTest, CreateRegistersAndRefusesATakenPlace) {
  EXPECT_EQ(switch_.num_registered(), 2u);
  auto again = SwitchedTransport::Create(&switch_, homa_a_.get(), kIdA);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status().ToString();
  // The refused one left the original registered.
  EXPECT_EQ(switch_.num_registered(), 2u);
  auto r = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("q"), 1);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(SwitchedTransport::IsLocalId(*r));
  EXPECT_EQ(SwitchedTransport::Create(nullptr, homa_a_.get(), 1).status().code(),
            StatusCode::kInvalidArgument);
  a_.reset();
  EXPECT_EQ(switch_.num_registered(), 1u);
}

TEST_F(SwitchedTransportTest, RequestAndResponseMoveThroughTheSwitchWithoutCopyOrPacket) {
  Buffer request = Buffer::Allocate(1 << 20);
  const std::byte* request_bytes = request.data();
  auto id = a_->SendRequestTo(host_addr_, kIdB, std::move(request), /*cookie=*/77);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  // Nothing shows before B polls, and then B's deadline says so.
  EXPECT_EQ(b_->NextDeadline(), clock_.NowNs());
  MessageEvent early;
  EXPECT_FALSE(b_->PopEvent(&early));

  std::vector<MessageEvent> at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].kind, Kind::kRequest);
  EXPECT_EQ(at_b[0].client_id, *id);
  EXPECT_EQ(at_b[0].message.data(), request_bytes);  // the same bytes, not a copy
  const ServerRpcKey key = at_b[0].server_key;
  EXPECT_EQ(key.client, host_addr_);  // the address A called, with A's port
  EXPECT_EQ(key.client_port, kIdA);
  EXPECT_EQ(key.client_id, *id);

  Buffer response = Buffer::Allocate(3 << 20);
  const std::byte* response_bytes = response.data();
  ASSERT_TRUE(b_->SendResponse(key, std::move(response)).ok());
  std::vector<MessageEvent> at_a = Drain(*a_);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].kind, Kind::kResponse);
  EXPECT_EQ(at_a[0].client_id, *id);
  EXPECT_EQ(at_a[0].cookie, 77u);
  EXPECT_EQ(at_a[0].message.data(), response_bytes);
  EXPECT_EQ(at_a[0].message.size(), size_t{3} << 20);

  // The socket never saw a packet; the counters say what happened.
  EXPECT_EQ(CounterOf(*a_, "homa.packets_sent"), 0u);
  EXPECT_EQ(net_.TotalCounters().sent, 0u);
  EXPECT_EQ(CounterOf(*a_, "homa.local.requests"), 1u);
  EXPECT_EQ(CounterOf(*b_, "homa.local.responses"), 1u);
  EXPECT_EQ(a_->num_local_calls(), 0u);
  EXPECT_EQ(b_->num_local_served(), 0u);  // A took the response: forgotten
  EXPECT_EQ(b_->SendResponse(key, Buffer()).code(), StatusCode::kNotFound);
}

TEST_F(SwitchedTransportTest, ServerCallsBackToTheClientAddressItSaw) {
  ASSERT_TRUE(a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("q"), 1).ok());
  std::vector<MessageEvent> at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), 1u);
  const ServerRpcKey& from = at_b[0].server_key;
  auto back = b_->SendRequestTo(from.client, from.client_port, Buffer::Copy("back"), 2);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(SwitchedTransport::IsLocalId(*back));
  std::vector<MessageEvent> at_a = Drain(*a_);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].kind, Kind::kRequest);
  EXPECT_EQ(at_a[0].message.AsStringView(), "back");
  EXPECT_EQ(at_a[0].server_key.client_port, kIdB);
  // Loopback and the unspecified address are this host's too.
  for (NetAddress addr : {NetAddress::Ipv4(0x7f000001, 4000), NetAddress::Ipv4(0, 4000)}) {
    ASSERT_TRUE(a_->SendRequestTo(addr, kIdB, Buffer::Copy("lo"), 3).ok());
    at_b = Drain(*b_);
    ASSERT_EQ(at_b.size(), 1u);
    EXPECT_EQ(at_b[0].server_key.client, addr);
  }
  EXPECT_EQ(net_.TotalCounters().sent, 0u);
}

TEST_F(SwitchedTransportTest, ACallToItselfIsLocalToo) {
  auto id = a_->SendRequestTo(host_addr_, kIdA, Buffer::Copy("me"), 5);
  ASSERT_TRUE(id.ok());
  std::vector<MessageEvent> got = Drain(*a_);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(a_->SendResponse(got[0].server_key, Buffer::Copy("you")).ok());
  got = Drain(*a_);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, Kind::kResponse);
  EXPECT_EQ(got[0].cookie, 5u);
  EXPECT_EQ(net_.TotalCounters().sent, 0u);
}

TEST_F(SwitchedTransportTest, RemotePeersAndUnswitchedEndpointsGoThroughTheInner) {
  auto remote = a_->SendRequestTo(remote_addr_, 0, Buffer::Copy("far"), 9);
  ASSERT_TRUE(remote.ok());
  EXPECT_FALSE(SwitchedTransport::IsLocalId(*remote));
  ASSERT_TRUE(RunUntil([&] { return !collected_.empty(); }));
  ASSERT_EQ(collected_.size(), 1u);
  EXPECT_EQ(collected_[0].kind, Kind::kResponse);
  EXPECT_EQ(collected_[0].cookie, 9u);
  EXPECT_EQ(collected_[0].message.AsStringView(), "far");
  EXPECT_GT(CounterOf(*a_, "homa.packets_sent"), 0u);
  EXPECT_EQ(CounterOf(*a_, "homa.local.requests"), 0u);

  // A local address, but an endpoint id nobody switched: the socket answers.
  const uint64_t before = net_.TotalCounters().sent;
  auto unknown = a_->SendRequestTo(host_addr_, 999, Buffer::Copy("?"), 10);
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(SwitchedTransport::IsLocalId(*unknown));
  EXPECT_GT(net_.TotalCounters().sent, before);
  EXPECT_TRUE(a_->Cancel(*unknown));  // the inner's to cancel
}

TEST_F(SwitchedTransportTest, ServerDeathFailsPendingCallsAtOnceButAnswersStand) {
  auto answered = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("1"), 1);
  auto unseen = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("2"), 2);
  ASSERT_TRUE(answered.ok() && unseen.ok());
  std::vector<MessageEvent> at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), 2u);
  ASSERT_TRUE(b_->SendResponse(at_b[0].server_key, Buffer::Copy("r1")).ok());
  auto after = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("3"), 3);
  ASSERT_TRUE(after.ok());

  b_.reset();  // B's application died
  std::vector<MessageEvent> at_a = Drain(*a_);  // no time passes
  ASSERT_EQ(at_a.size(), 3u);
  EXPECT_EQ(at_a[0].kind, Kind::kResponse);
  EXPECT_EQ(at_a[0].cookie, 1u);
  // The failures come in table order, not call order.
  std::sort(at_a.begin() + 1, at_a.end(),
            [](const MessageEvent& x, const MessageEvent& y) { return x.cookie < y.cookie; });
  for (size_t i : {1, 2}) {
    EXPECT_EQ(at_a[i].kind, Kind::kFailed);
    EXPECT_EQ(at_a[i].status.code(), StatusCode::kUnavailable) << at_a[i].status.ToString();
  }
  EXPECT_EQ(at_a[1].cookie, 2u);
  EXPECT_EQ(at_a[2].cookie, 3u);
  EXPECT_EQ(CounterOf(*a_, "homa.local.failed"), 2u);
  EXPECT_EQ(a_->num_local_calls(), 0u);
  // B's place is free: a new call goes to the socket (which has no B).
  auto later = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("4"), 4);
  ASSERT_TRUE(later.ok());
  EXPECT_FALSE(SwitchedTransport::IsLocalId(*later));
}

TEST_F(SwitchedTransportTest, ClientDeathForgetsItsRequestsAtTheServer) {
  ASSERT_TRUE(a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("seen"), 1).ok());
  std::vector<MessageEvent> at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), 1u);
  ASSERT_TRUE(a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("unseen"), 2).ok());
  EXPECT_EQ(b_->num_local_served(), 2u);

  a_.reset();
  EXPECT_EQ(b_->num_local_served(), 0u);
  EXPECT_TRUE(Drain(*b_).empty());  // the unseen request is never delivered
  EXPECT_EQ(b_->SendResponse(at_b[0].server_key, Buffer::Copy("late")).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(CounterOf(*b_, "homa.local.responses"), 0u);
}

TEST_F(SwitchedTransportTest, CancelWorksAtEveryStage) {
  // Before the server polled: it never sees the request.
  auto early = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("early"), 1);
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE(a_->Cancel(*early));
  EXPECT_TRUE(Drain(*b_).empty());

  // After it took the request: its answer is NotFound, no event follows.
  auto mid = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("mid"), 2);
  ASSERT_TRUE(mid.ok());
  std::vector<MessageEvent> at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_TRUE(a_->Cancel(*mid));
  EXPECT_EQ(b_->SendResponse(at_b[0].server_key, Buffer::Copy("r")).code(),
            StatusCode::kNotFound);

  // After the answer was queued for us: it is dropped.
  auto late = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("late"), 3);
  ASSERT_TRUE(late.ok());
  at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), 1u);
  ASSERT_TRUE(b_->SendResponse(at_b[0].server_key, Buffer::Copy("r")).ok());
  EXPECT_TRUE(a_->Cancel(*late));
  EXPECT_TRUE(Drain(*a_).empty());
  EXPECT_EQ(b_->num_local_served(), 0u);

  EXPECT_FALSE(a_->Cancel(*late));  // twice, or unknown
  EXPECT_FALSE(a_->Cancel(SwitchedTransport::kLocalIdBit | 12345));
  EXPECT_EQ(CounterOf(*a_, "homa.local.cancelled"), 3u);
  EXPECT_EQ(a_->num_local_calls(), 0u);
}

TEST_F(SwitchedTransportTest, AnsweringTwiceOrAnUnknownKey) {
  auto id = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy("q"), 1);
  ASSERT_TRUE(id.ok());
  std::vector<MessageEvent> at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), 1u);
  const ServerRpcKey key = at_b[0].server_key;
  ASSERT_TRUE(b_->SendResponse(key, Buffer::Copy("one")).ok());
  EXPECT_EQ(b_->SendResponse(key, Buffer::Copy("two")).code(), StatusCode::kFailedPrecondition);
  std::vector<MessageEvent> at_a = Drain(*a_);
  ASSERT_EQ(at_a.size(), 1u);  // exactly one response
  EXPECT_EQ(at_a[0].message.AsStringView(), "one");

  // A key that differs in any field is not the RPC.
  ServerRpcKey wrong_port = key;
  wrong_port.client_port = kIdB;
  ServerRpcKey unknown = key;
  unknown.client_id = SwitchedTransport::kLocalIdBit | 4;
  for (const ServerRpcKey& k : {wrong_port, unknown}) {
    EXPECT_EQ(b_->SendResponse(k, Buffer::Copy("x")).code(), StatusCode::kNotFound);
  }
  // A remote-looking key is the inner's business (which knows nothing of it).
  ServerRpcKey remote{remote_addr_, 0, 1000};
  EXPECT_EQ(b_->SendResponse(remote, Buffer::Copy("x")).code(), StatusCode::kNotFound);
  EXPECT_EQ(net_.TotalCounters().sent, 0u);
}

TEST_F(SwitchedTransportTest, EveryRequestIsDeliveredExactlyOnce) {
  constexpr int kCalls = 100;
  std::vector<uint64_t> ids;
  for (int i = 0; i < kCalls; ++i) {
    auto id = a_->SendRequestTo(host_addr_, kIdB, Buffer::Copy(std::to_string(i)), i);
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  std::vector<MessageEvent> at_b = Drain(*b_);
  ASSERT_EQ(at_b.size(), size_t{kCalls});
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(at_b[i].client_id, ids[i]);
    EXPECT_EQ(at_b[i].message.AsStringView(), std::to_string(i));
    ASSERT_TRUE(b_->SendResponse(at_b[i].server_key, Buffer::Copy("r")).ok());
  }
  EXPECT_TRUE(Drain(*b_).empty());  // nothing is delivered twice
  std::vector<MessageEvent> at_a = Drain(*a_);
  ASSERT_EQ(at_a.size(), size_t{kCalls});
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(at_a[i].cookie, uint64_t(i));
  EXPECT_TRUE(Drain(*a_).empty());
}

TEST_F(SwitchedTransportTest, CapRefusesBothSidesWithResourceExhausted) {
  std::unique_ptr<homa::HomaEndpoint> homa_c;
  std::unique_ptr<SwitchedTransport> c = Open(33, &homa_c, SwitchLimits{.max_local_rpcs = 2});
  // C as client: two pending, the third refused.
  ASSERT_TRUE(c->SendRequestTo(host_addr_, kIdB, Buffer::Copy("1"), 1).ok());
  ASSERT_TRUE(c->SendRequestTo(host_addr_, kIdB, Buffer::Copy("2"), 2).ok());
  auto third = c->SendRequestTo(host_addr_, kIdB, Buffer::Copy("3"), 3);
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted) << third.status().ToString();
  EXPECT_EQ(CounterOf(*c, "homa.local.refused"), 1u);
  EXPECT_EQ(CounterOf(*c, "homa.local.pending_calls"), 2u);
  // C as server: two held, the third caller refused.
  ASSERT_TRUE(a_->SendRequestTo(host_addr_, 33, Buffer::Copy("1"), 1).ok());
  ASSERT_TRUE(a_->SendRequestTo(host_addr_, 33, Buffer::Copy("2"), 2).ok());
  auto over = a_->SendRequestTo(host_addr_, 33, Buffer::Copy("3"), 3);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(CounterOf(*a_, "homa.local.refused"), 1u);
  // Room again once one ends.
  std::vector<MessageEvent> at_c = Drain(*c);
  ASSERT_EQ(at_c.size(), 2u);
  ASSERT_TRUE(c->SendResponse(at_c[0].server_key, Buffer()).ok());
  ASSERT_EQ(Drain(*a_).size(), 1u);
  EXPECT_TRUE(a_->SendRequestTo(host_addr_, 33, Buffer::Copy("4"), 4).ok());
  EXPECT_EQ(net_.TotalCounters().sent, 0u);
  c.reset();  // before its inner
}

TEST_F(SwitchedTransportTest, PopEventAlternatesBetweenInnerAndLocal) {
  // A remote request to A and local requests to A, both ready in one Poll.
  ASSERT_TRUE(remote_->SendRequestTo(host_addr_, kIdA, Buffer::Copy("remote1"), 1).ok());
  ASSERT_TRUE(remote_->SendRequestTo(host_addr_, kIdA, Buffer::Copy("remote2"), 2).ok());
  for (int step = 0; step < 100 && homa_a_->pending_events() < 2; ++step) {
    remote_->Poll();
    homa_a_->Poll();
    // The network's next delivery or a host's timer, whichever is first
    // (the network alone may have nothing: never jump to the end of time).
    const TimeNs next = std::min({clock_.NextDeadline(), remote_->NextDeadline(),
                                  homa_a_->NextDeadline()});
    clock_.AdvanceTo(std::max(next, clock_.NowNs() + 1));
  }
  ASSERT_EQ(homa_a_->pending_events(), 2u);
  ASSERT_TRUE(b_->SendRequestTo(host_addr_, kIdA, Buffer::Copy("local1"), 1).ok());
  ASSERT_TRUE(b_->SendRequestTo(host_addr_, kIdA, Buffer::Copy("local2"), 2).ok());
  std::vector<MessageEvent> got = Drain(*a_);
  ASSERT_EQ(got.size(), 4u);
  std::vector<std::string> order;
  for (const MessageEvent& e : got) order.emplace_back(e.message.AsStringView());
  EXPECT_EQ(order, (std::vector<std::string>{"local1", "remote1", "local2", "remote2"}));
}

TEST_F(SwitchedTransportTest, SwitchClosingFirstDetachesItsTransports) {
  // A second switch, closed under a transport still registered with it.
  auto other = std::make_unique<LocalSwitch>(clock_);
  other->AddLocalAddress(host_addr_);
  auto c = SwitchedTransport::Create(other.get(), homa_a_.get(), kIdA);
  ASSERT_TRUE(c.ok());
  std::unique_ptr<SwitchedTransport> t = std::move(c).value();
  auto self = t->SendRequestTo(host_addr_, kIdA, Buffer::Copy("self"), 8);
  ASSERT_TRUE(self.ok());
  EXPECT_TRUE(SwitchedTransport::IsLocalId(*self));
  other.reset();
  std::vector<MessageEvent> got = Drain(*t);
  ASSERT_EQ(got.size(), 1u);  // its own call failed; its own request dropped
  EXPECT_EQ(got[0].kind, Kind::kFailed);
  EXPECT_EQ(got[0].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(got[0].cookie, 8u);
  // Detached: everything goes to the inner from now on.
  auto after = t->SendRequestTo(host_addr_, kIdB, Buffer::Copy("x"), 9);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(SwitchedTransport::IsLocalId(*after));
}

}  // namespace
}  // namespace wharf::daemon
