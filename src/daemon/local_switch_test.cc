// Tests of daemon::LocalSwitch: its address rules, then component tests of
// engines hosted as wharfd hosts them: several endpoints on one HomaHost
// socket, each engine on a SwitchedTransport registered with one switch,
// plus a remote engine on another address of the FakeNetwork. The
// transport-level details are switched_transport_test.cc's.
#include "daemon/local_switch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "daemon/switched_transport.h"
#include "engine/testing/test_host.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_datagram.h"
#include "transport/fake/fake_network.h"

namespace wharf::daemon {
namespace {

using engine::IncomingCall;
using engine::Uri;
using engine::testing::OpPtr;
using engine::testing::TestHost;
using transport::MessageTransport;
using transport::NetAddress;

uint64_t CounterOf(const MessageTransport& t, std::string_view name) {
  for (const auto& [key, value] : t.Counters()) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

NetAddress Ipv6(uint8_t last, uint16_t port) {
  std::array<uint8_t, 16> ip{};
  ip[15] = last;
  return NetAddress::Ipv6(ip, port);
}

TEST(LocalSwitchTest, LoopbackUnspecifiedAndAddedAddressesAreLocal) {
  SimClock clock(0);
  LocalSwitch sw(clock);
  EXPECT_TRUE(sw.IsLocal(NetAddress::Ipv4(0x7f000001, 1)));
  EXPECT_TRUE(sw.IsLocal(NetAddress::Ipv4(0x7f0a0b0c, 2)));  // all of 127/8
  EXPECT_TRUE(sw.IsLocal(NetAddress::Ipv4(0, 3)));
  EXPECT_TRUE(sw.IsLocal(Ipv6(1, 4)));  // ::1
  EXPECT_TRUE(sw.IsLocal(Ipv6(0, 5)));  // ::
  EXPECT_FALSE(sw.IsLocal(Ipv6(2, 4)));
  EXPECT_FALSE(sw.IsLocal(NetAddress()));
  const NetAddress mine = NetAddress::Ipv4(0xC6120001, 4000);
  EXPECT_FALSE(sw.IsLocal(mine));
  sw.AddLocalAddress(mine);
  sw.AddLocalAddress(mine.WithPort(9));  // the same IP: kept once
  EXPECT_TRUE(sw.IsLocal(mine));
  EXPECT_TRUE(sw.IsLocal(mine.WithPort(1234)));  // ports are the registry's business
  EXPECT_FALSE(sw.IsLocal(NetAddress::Ipv4(0xC6120002, 4000)));
  EXPECT_EQ(sw.num_registered(), 0u);
}

// One engine: its transports and host, destroyed host first.
struct EngineNode {
  Uri uri;  // how peers name it
  std::unique_ptr<homa::HomaEndpoint> homa;
  std::unique_ptr<SwitchedTransport> switched;  // null for the remote node
  std::unique_ptr<TestHost> engine;
  MessageTransport& transport() const {
    return switched ? static_cast<MessageTransport&>(*switched) : *homa;
  }
};

class LocalSwitchEngineTest : public ::testing::Test {
 protected:
  LocalSwitchEngineTest() {
    switch_.AddLocalAddress(host_addr_);
    host_ = *homa::HomaHost::Create(homa::HomaConfig{}, datagram_.get(), clock_);
  }

  // An application's endpoint attached to the daemon: endpoint `id` on the
  // shared socket, switched.
  EngineNode& AddLocal(uint16_t id, SwitchLimits limits = SwitchLimits{}) {
    auto node = std::make_unique<EngineNode>();
    node->uri = Uri{"homa", host_addr_, id, "#" + std::to_string(id)};
    node->homa = *host_->OpenEndpoint(id);
    auto switched = SwitchedTransport::Create(&switch_, node->homa.get(), id, limits);
    EXPECT_TRUE(switched.ok()) << switched.status().ToString();
    node->switched = std::move(switched).value();
    node->engine = std::make_unique<TestHost>(node->switched.get(), nullptr, clock_);
    nodes_.push_back(std::move(node));
    return *nodes_.back();
  }
  // An engine on another host, on its own socket.
  EngineNode& AddRemote() {
    auto node = std::make_unique<EngineNode>();
    node->uri = Uri{"homa", remote_addr_, 0, ""};
    node->homa = *homa::HomaTransport::Create(homa::HomaConfig{}, remote_dg_.get(), clock_);
    node->engine = std::make_unique<TestHost>(node->homa.get(), nullptr, clock_);
    nodes_.push_back(std::move(node));
    return *nodes_.back();
  }
  // The application died: its engine, its switched transport, its endpoint.
  static void Kill(EngineNode& node) {
    node.engine.reset();
    node.switched.reset();
    node.homa.reset();
  }

  bool PollAll() {
    bool any = false;
    for (auto& node : nodes_) {
      if (node->engine) any |= node->engine->Poll().work > 0;
    }
    return any;
  }
  TimeNs NextDeadline() const {
    TimeNs next = clock_.NextDeadline();
    for (const auto& node : nodes_) {
      if (node->engine) next = std::min(next, node->engine->NextDeadline());
    }
    return next;
  }
  bool RunUntil(const std::function<bool()>& done, DurationNs limit_ns = kNsPerSec) {
    const TimeNs end = clock_.NowNs() + limit_ns;
    while (true) {
      for (int i = 0; i < 1000 && PollAll(); ++i) {
      }
      if (done()) return true;
      const TimeNs next = std::max(NextDeadline(), clock_.NowNs() + 1);
      if (next > end) {
        clock_.AdvanceTo(end);
        PollAll();
        return done();
      }
      clock_.AdvanceTo(next);
    }
  }
  bool RunUntilDone(const OpPtr& op) {
    return RunUntil([&] { return op->done.load(); });
  }
  std::pair<uint64_t, uint64_t> ConnectPair(EngineNode& a, EngineNode& b) {
    b.engine->Listen();
    OpPtr accept = b.engine->Accept(kNever);
    OpPtr connect = a.engine->Connect(b.uri, /*ordered=*/false, kNever);
    EXPECT_TRUE(RunUntil([&] { return accept->done && connect->done; }));
    EXPECT_TRUE(connect->status.ok()) << connect->status.ToString();
    EXPECT_TRUE(accept->status.ok()) << accept->status.ToString();
    return {connect->value, accept->value};
  }
  uint64_t PacketsSent() const { return net_.TotalCounters().sent; }

  NetAddress host_addr_ = NetAddress::Ipv4(0xC6120001, 4000);    // 198.18.0.1: wharfd's
  NetAddress remote_addr_ = NetAddress::Ipv4(0xC6120002, 4000);  // 198.18.0.2: elsewhere
  // Declared so that what borrows is destroyed first.
  SimClock clock_{0};
  transport::fake::FakeNetwork net_{clock_, /*seed=*/1};
  LocalSwitch switch_{clock_};
  std::unique_ptr<transport::fake::FakeDatagram> datagram_ = net_.Attach("H", host_addr_);
  std::unique_ptr<transport::fake::FakeDatagram> remote_dg_ = net_.Attach("R", remote_addr_);
  std::unique_ptr<homa::HomaHost> host_;
  std::vector<std::unique_ptr<EngineNode>> nodes_;
};

TEST_F(LocalSwitchEngineTest, ConnectSendRecvAndRpcWithoutAPacket) {
  EngineNode& a = AddLocal(11);
  EngineNode& b = AddLocal(22);
  auto [ca, cb] = ConnectPair(a, b);
  EXPECT_EQ(*a.engine->PeerOf(ca), "homa://198.18.0.1:4000/#22");
  EXPECT_EQ(*b.engine->PeerOf(cb), "homa://198.18.0.1:4000/#11");

  OpPtr recv_b = b.engine->Recv(cb);
  OpPtr send_a = a.engine->Send(ca, Buffer::Copy("hello from A"));
  ASSERT_TRUE(RunUntil([&] { return recv_b->done && send_a->done; }));
  EXPECT_TRUE(send_a->status.ok()) << send_a->status.ToString();
  EXPECT_EQ(recv_b->message.AsStringView(), "hello from A");
  // The accepting side sends back over the address it saw.
  OpPtr recv_a = a.engine->Recv(ca);
  OpPtr send_b = b.engine->Send(cb, Buffer::Copy("hello from B"));
  ASSERT_TRUE(RunUntil([&] { return recv_a->done && send_b->done; }));
  EXPECT_EQ(recv_a->message.AsStringView(), "hello from B");

  std::string seen_peer;
  b.engine->SetHandler(7, [&](const RpcContext& ctx, Buffer req) -> Result<Buffer> {
    seen_peer = ctx.peer;
    return Buffer::Copy("echo:" + std::string(req.AsStringView()));
  });
  OpPtr call = a.engine->Call(b.uri, 7, Buffer::Copy("ping"), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  ASSERT_TRUE(call->status.ok()) << call->status.ToString();
  EXPECT_EQ(call->message.AsStringView(), "echo:ping");
  EXPECT_EQ(seen_peer, "homa://198.18.0.1:4000/#11");

  // Not one packet, on the network or in the protocol.
  EXPECT_EQ(PacketsSent(), 0u);
  EXPECT_EQ(CounterOf(*a.switched, "homa.packets_sent"), 0u);
  EXPECT_GE(CounterOf(*a.switched, "homa.local.requests"), 3u);  // connect, send, call
  EXPECT_GE(CounterOf(*b.switched, "homa.local.requests"), 1u);  // its send
  EXPECT_EQ(a.switched->num_local_calls(), 0u);
  EXPECT_EQ(b.switched->num_local_served(), 0u);
}

TEST_F(LocalSwitchEngineTest, RemotePeersStillGoThroughTheSocket) {
  EngineNode& a = AddLocal(11);
  EngineNode& r = AddRemote();
  r.engine->SetHandler(1, [](const RpcContext&, Buffer) -> Result<Buffer> {
    return Buffer::Copy("from afar");
  });
  a.engine->SetHandler(2, [](const RpcContext& ctx, Buffer) -> Result<Buffer> {
    return Buffer::Copy(std::string(ctx.peer));
  });
  OpPtr out = a.engine->Call(r.uri, 1, Buffer::Copy("q"), kNever);
  OpPtr in = r.engine->Call(a.uri, 2, Buffer::Copy("q"), kNever);
  ASSERT_TRUE(RunUntil([&] { return out->done && in->done; }));
  ASSERT_TRUE(out->status.ok()) << out->status.ToString();
  EXPECT_EQ(out->message.AsStringView(), "from afar");
  ASSERT_TRUE(in->status.ok()) << in->status.ToString();
  EXPECT_EQ(in->message.AsStringView(), "homa://198.18.0.2:4000");
  EXPECT_GT(PacketsSent(), 0u);
  EXPECT_GT(CounterOf(*a.switched, "homa.packets_sent"), 0u);
  EXPECT_EQ(CounterOf(*a.switched, "homa.local.requests"), 0u);
}

TEST_F(LocalSwitchEngineTest, ServerDeathFailsThePendingCallAtOnce) {
  EngineNode& a = AddLocal(11);
  EngineNode& b = AddLocal(22);
  b.engine->SetDeferred(1);
  OpPtr call = a.engine->Call(b.uri, 1, Buffer::Copy("q"), kNever);
  ASSERT_TRUE(RunUntil([&] { return !b.engine->deferred().empty(); }));
  b.engine->deferred().clear();
  Kill(b);
  const TimeNs died_at = clock_.NowNs();
  a.engine->Poll();  // one poll, no time passing: the switch knew at once
  ASSERT_TRUE(call->done);
  EXPECT_EQ(call->status.code(), StatusCode::kUnavailable) << call->status.ToString();
  EXPECT_EQ(clock_.NowNs(), died_at);
  EXPECT_EQ(a.engine->pending_ops(), 0u);
  EXPECT_EQ(PacketsSent(), 0u);
}

TEST_F(LocalSwitchEngineTest, ClientDeathMakesTheServersRespondANoOp) {
  EngineNode& a = AddLocal(11);
  EngineNode& b = AddLocal(22);
  b.engine->SetDeferred(1);
  OpPtr call = a.engine->Call(b.uri, 1, Buffer::Copy("q"), kNever);
  ASSERT_TRUE(RunUntil([&] { return !b.engine->deferred().empty(); }));
  IncomingCall pending = std::move(b.engine->deferred().front());
  b.engine->deferred().pop_front();
  EXPECT_EQ(b.switched->num_local_served(), 1u);
  Kill(a);
  EXPECT_EQ(b.switched->num_local_served(), 0u);
  // The transport says NotFound; the engine drops it quietly.
  ASSERT_EQ(b.switched->SendResponse(pending.ref.key, Buffer::Copy("late")).code(),
            StatusCode::kNotFound);
  b.engine->Respond(pending.ref, OkStatus(), Buffer::Copy("late"));
  RunUntil([] { return false; }, 10 * kNsPerMs);
  EXPECT_EQ(CounterOf(*b.switched, "homa.local.responses"), 0u);
  EXPECT_EQ(PacketsSent(), 0u);
}

TEST_F(LocalSwitchEngineTest, CancelReachesTheServerAndNoResponseFollows) {
  EngineNode& a = AddLocal(11);
  EngineNode& b = AddLocal(22);
  b.engine->SetDeferred(1);
  OpPtr call = a.engine->Call(b.uri, 1, Buffer::Copy("q"), kNever);
  ASSERT_TRUE(RunUntil([&] { return !b.engine->deferred().empty(); }));
  a.engine->Cancel(call->op_id);
  ASSERT_TRUE(call->done);
  EXPECT_EQ(call->status.code(), StatusCode::kCancelled);
  // The engine's notice (itself a local RPC) tells the server.
  ASSERT_TRUE(RunUntil([&] { return !b.engine->cancelled().empty(); }));
  EXPECT_EQ(b.engine->cancelled().front(), b.engine->deferred().front().ref);
  EXPECT_EQ(b.switched->SendResponse(b.engine->deferred().front().ref.key, Buffer()).code(),
            StatusCode::kNotFound);
  b.engine->Respond(b.engine->deferred().front().ref, OkStatus(), Buffer::Copy("r"));
  RunUntil([] { return false; }, 10 * kNsPerMs);
  EXPECT_EQ(call->status.code(), StatusCode::kCancelled);
  EXPECT_EQ(a.engine->pending_ops(), 0u);
  EXPECT_EQ(a.switched->num_local_calls(), 0u);
  EXPECT_EQ(b.switched->num_local_served(), 0u);
  EXPECT_EQ(CounterOf(*a.switched, "homa.local.cancelled"), 1u);
  EXPECT_EQ(PacketsSent(), 0u);
}

TEST_F(LocalSwitchEngineTest, EachCallRunsItsHandlerExactlyOnce) {
  EngineNode& a = AddLocal(11);
  EngineNode& b = AddLocal(22);
  EngineNode& c = AddLocal(33);
  int runs = 0;
  b.engine->SetHandler(1, [&](const RpcContext&, Buffer req) -> Result<Buffer> {
    ++runs;
    return req;
  });
  std::vector<OpPtr> calls;
  for (int i = 0; i < 50; ++i) {
    EngineNode& from = i % 2 == 0 ? a : c;
    calls.push_back(from.engine->Call(b.uri, 1, Buffer::Copy(std::to_string(i)), kNever));
  }
  ASSERT_TRUE(RunUntil([&] {
    return std::all_of(calls.begin(), calls.end(), [](const OpPtr& op) { return op->done.load(); });
  }));
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(calls[i]->status.ok()) << calls[i]->status.ToString();
    EXPECT_EQ(calls[i]->message.AsStringView(), std::to_string(i));
  }
  RunUntil([] { return false; }, 100 * kNsPerMs);
  EXPECT_EQ(runs, 50);
  EXPECT_EQ(PacketsSent(), 0u);
}

TEST_F(LocalSwitchEngineTest, TheCapRefusesCallsWithResourceExhausted) {
  EngineNode& a = AddLocal(11, SwitchLimits{.max_local_rpcs = 2});
  EngineNode& b = AddLocal(22);
  b.engine->SetDeferred(1);
  OpPtr first = a.engine->Call(b.uri, 1, Buffer::Copy("1"), kNever);
  OpPtr second = a.engine->Call(b.uri, 1, Buffer::Copy("2"), kNever);
  OpPtr third = a.engine->Call(b.uri, 1, Buffer::Copy("3"), kNever);
  ASSERT_TRUE(third->done);  // refused at once
  EXPECT_EQ(third->status.code(), StatusCode::kResourceExhausted) << third->status.ToString();
  EXPECT_EQ(CounterOf(*a.switched, "homa.local.refused"), 1u);
  ASSERT_TRUE(RunUntil([&] { return b.engine->deferred().size() == 2; }));
  b.engine->Respond(b.engine->deferred().front().ref, OkStatus(), Buffer::Copy("r"));
  ASSERT_TRUE(RunUntilDone(first));
  EXPECT_TRUE(first->status.ok());
  EXPECT_FALSE(second->done);
}

TEST_F(LocalSwitchEngineTest, LargePayloadsMoveWithoutACopy) {
  EngineNode& a = AddLocal(11);
  EngineNode& b = AddLocal(22);
  auto [ca, cb] = ConnectPair(a, b);
  Buffer message = Buffer::Allocate(16 << 20);
  std::memset(message.data(), 0x5a, message.size());
  const std::byte* bytes = message.data();
  OpPtr recv = b.engine->Recv(cb);
  OpPtr send = a.engine->Send(ca, std::move(message));
  ASSERT_TRUE(RunUntil([&] { return recv->done && send->done; }));
  ASSERT_TRUE(recv->status.ok()) << recv->status.ToString();
  EXPECT_EQ(recv->message.data(), bytes);  // the frame went in the headroom
  EXPECT_EQ(recv->message.size(), size_t{16} << 20);

  // An RPC's request and response the same way.
  const std::byte* seen_request = nullptr;
  const std::byte* sent_response = nullptr;
  b.engine->SetHandler(1, [&](const RpcContext&, Buffer req) -> Result<Buffer> {
    seen_request = req.data();
    Buffer response = Buffer::Allocate(8 << 20);
    sent_response = response.data();
    return response;
  });
  Buffer request = Buffer::Allocate(8 << 20);
  const std::byte* request_bytes = request.data();
  OpPtr call = a.engine->Call(b.uri, 1, std::move(request), kNever);
  ASSERT_TRUE(RunUntilDone(call));
  ASSERT_TRUE(call->status.ok()) << call->status.ToString();
  EXPECT_EQ(seen_request, request_bytes);
  EXPECT_EQ(call->message.data(), sent_response);
  EXPECT_EQ(PacketsSent(), 0u);
}

}  // namespace
}  // namespace wharf::daemon
