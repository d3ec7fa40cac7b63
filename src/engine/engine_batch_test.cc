// Tests of the engine's send batching on FakeNetwork + SimClock: the answers
// to the requests one transport delivered in one Poll leave in one Send();
// a handler that runs longer than Engine::kMaxBatchHoldNs makes the engine
// send the answers before it ahead of the next handler; Engine::BeginBatch /
// EndBatch span every transport, including one opened inside the batch.
// And the priority a call or an answer is given reaches the packets.
//
// The server engine's sink answers inside OnRequest (as the embedded host
// does for synchronous handlers), so its answers fall inside Poll's batch.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/testing/engine_fixture.h"
#include "transport/fake/counting_datagram.h"
#include "wire/packet.h"

namespace wharf::engine {
namespace {

using testing::EngineTest;
using testing::StatePtr;
using transport::fake::CountingDatagram;

constexpr uint32_t kMethod = 7;

// Answers every request at once with "re:" + the request; `before` runs
// first, with the handler's index (0 for the first request of the test).
class AnsweringSink final : public EngineSink {
 public:
  void set_engine(Engine* engine) { engine_ = engine; }
  std::function<void(int)> before;
  int handled = 0;
  bool runs_inline = true;  // what MayRunHandlersInline says
  transport::MessagePriority priority = transport::kPriorityBySize;  // of the answers
  std::vector<std::pair<uint64_t, Status>> completed;  // the server's own calls

  void OnComplete(uint64_t op_id, Status status, Buffer, uint64_t) override {
    completed.emplace_back(op_id, std::move(status));
  }
  void OnRequest(IncomingCall call) override {
    if (before) before(handled);
    ++handled;
    engine_->Respond(call.ref, OkStatus(),
                     Buffer::Copy("re:" + std::string(call.request.AsStringView())), priority);
  }
  void OnCallCancelled(const ServerCallRef&) override {}
  bool MayRunHandlersInline() const override { return runs_inline; }

 private:
  Engine* engine_ = nullptr;
};

// A MessageTransport that forwards to another and counts batch calls.
class BatchCountingTransport final : public transport::MessageTransport {
 public:
  explicit BatchCountingTransport(transport::MessageTransport* inner, std::string scheme)
      : inner_(inner), scheme_(std::move(scheme)) {}
  int begins = 0;
  int ends = 0;
  int depth = 0;  // begins - ends, never below 0 if the engine pairs them

  std::string_view scheme() const override { return scheme_; }
  transport::NetAddress LocalAddress() const override { return inner_->LocalAddress(); }
  Result<uint64_t> SendRequest(const transport::NetAddress& server, Buffer request,
                               uint64_t cookie) override {
    return inner_->SendRequest(server, std::move(request), cookie);
  }
  Result<uint64_t> SendRequestTo(const transport::NetAddress& server, uint16_t endpoint,
                                 Buffer request, uint64_t cookie,
                                 const transport::SendOptions& options = {}) override {
    return inner_->SendRequestTo(server, endpoint, std::move(request), cookie, options);
  }
  Status SendResponse(const transport::ServerRpcKey& key, Buffer response,
                      transport::MessagePriority priority = transport::kPriorityBySize) override {
    return inner_->SendResponse(key, std::move(response), priority);
  }
  void BeginBatch() override {
    ++begins;
    ++depth;
    inner_->BeginBatch();
  }
  void EndBatch() override {
    ++ends;
    if (--depth < 0) ADD_FAILURE() << scheme_ << ": EndBatch without a BeginBatch";
    inner_->EndBatch();
  }
  bool Cancel(uint64_t client_id) override { return inner_->Cancel(client_id); }
  transport::PollResult Poll() override { return inner_->Poll(); }
  TimeNs NextDeadline() const override { return inner_->NextDeadline(); }
  bool PopEvent(transport::MessageEvent* out) override { return inner_->PopEvent(out); }
  int ReadableFd() const override { return inner_->ReadableFd(); }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override {
    return inner_->Counters();
  }

 private:
  transport::MessageTransport* inner_;
  std::string scheme_;
};

class EngineBatchTest : public EngineTest {
 protected:
  // The server: an engine on homa over a counting datagram, answering with
  // sink_. Clients are EngineTest nodes.
  void AddServer(TransportOpener opener = nullptr) {
    server_addr_ = transport::NetAddress::Ipv4(0xC6120064, 4000);
    server_net_ = std::make_unique<CountingDatagram>(net_.Attach("S", server_addr_));
    auto homa = homa::HomaTransport::Create(homa::HomaConfig{}, server_net_.get(), clock_);
    ASSERT_TRUE(homa.ok()) << homa.status();
    server_homa_ = std::move(homa).value();
    server_primary_ = std::make_unique<BatchCountingTransport>(server_homa_.get(), "homa");
    server_ = std::make_unique<Engine>(server_primary_.get(), std::move(opener), clock_,
                                       EngineLimits{}, &sink_);
    server_->SetServed(kMethod, true);
    sink_.set_engine(server_.get());
  }
  Uri server_uri() const { return Uri{"homa", server_addr_}; }

  // Polls the clients until `count` requests reached the server's socket
  // (the server is not polled, so they wait to be delivered in one Poll).
  bool DeliverToServer(size_t count) {
    for (int i = 0; i < 10'000; ++i) {
      if (server_net_->inner().pending() >= count) return true;
      PollAll();
      clock_.AdvanceTo(clock_.NowNs() + kNsPerUs);
    }
    return false;
  }
  // Three requests from one client reach the server, whose one Poll then
  // handles them, each handler taking `handler_ns` of the clock. Returns
  // the server's Send calls made before each handler started; *sends gets
  // those made during the whole Poll.
  std::vector<int> PollThreeRequests(DurationNs handler_ns, int* sends) {
    testing::Node& a = AddNode("A");
    for (int i = 0; i < 3; ++i) a.engine->Call(server_uri(), kMethod, Text("q"), kNever);
    EXPECT_TRUE(DeliverToServer(3));
    const int before = server_net_->send_calls;
    std::vector<int> seen;
    sink_.before = [&](int) {
      seen.push_back(server_net_->send_calls - before);
      clock_.AdvanceTo(clock_.NowNs() + handler_ns);
    };
    server_->Poll();
    *sends = server_net_->send_calls - before;
    return seen;
  }
  // Polls the server and every client until `done`.
  bool RunAllUntil(const std::function<bool()>& done) {
    for (int i = 0; i < 100'000 && !done(); ++i) {
      server_->Poll();
      PollAll();
      clock_.AdvanceTo(clock_.NowNs() + kNsPerUs);
    }
    return done();
  }

  void TearDown() override {
    server_.reset();
    server_primary_.reset();
    server_homa_.reset();
    server_net_.reset();
  }

  AnsweringSink sink_;
  transport::NetAddress server_addr_;
  std::unique_ptr<CountingDatagram> server_net_;
  std::unique_ptr<homa::HomaTransport> server_homa_;
  std::unique_ptr<BatchCountingTransport> server_primary_;
  std::unique_ptr<Engine> server_;
};

TEST_F(EngineBatchTest, AnswersToRequestsDeliveredInOnePollLeaveInOneSend) {
  AddServer();
  testing::Node& a = AddNode("A");
  constexpr int kCalls = 6;
  std::vector<StatePtr> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(a.engine->Call(server_uri(), kMethod, Text("q" + std::to_string(i)), kNever));
  }
  ASSERT_TRUE(DeliverToServer(kCalls));
  const int sends = server_net_->send_calls;
  server_->Poll();
  EXPECT_EQ(sink_.handled, kCalls);
  ASSERT_EQ(server_net_->send_calls, sends + 1) << "the answers left in more than one Send";
  EXPECT_EQ(server_net_->batch_sizes.back(), static_cast<size_t>(kCalls));
  EXPECT_EQ(server_primary_->depth, 0);
  ASSERT_TRUE(RunAllUntil([&] {
    for (auto& c : calls) {
      if (!Done(c)) return false;
    }
    return true;
  }));
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i]->status.ok()) << calls[i]->status;
    EXPECT_EQ(calls[i]->message.AsStringView(), "re:q" + std::to_string(i));
  }
}

TEST_F(EngineBatchTest, ASlowHandlerMakesTheEngineSendEarlierAnswersBeforeTheNextHandler) {
  AddServer();
  testing::Node& a = AddNode("A");
  std::vector<StatePtr> calls;
  for (int i = 0; i < 3; ++i) {
    calls.push_back(a.engine->Call(server_uri(), kMethod, Text("q" + std::to_string(i)), kNever));
  }
  ASSERT_TRUE(DeliverToServer(3));
  const int sends = server_net_->send_calls;
  std::vector<int> seen;  // server Send calls when each handler started
  sink_.before = [&](int index) {
    seen.push_back(server_net_->send_calls - sends);
    if (index == 0) clock_.AdvanceTo(clock_.NowNs() + Engine::kMaxBatchHoldNs + kNsPerUs);
  };
  server_->Poll();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], 0);
  EXPECT_EQ(seen[1], 1) << "the first answer was still held when the next handler started";
  // The cut opened a new batch: the third handler (fast, after the cut)
  // does not cut again, and the last two answers leave together.
  EXPECT_EQ(seen[2], 1);
  EXPECT_EQ(server_net_->send_calls - sends, 2);
  EXPECT_EQ(server_net_->batch_sizes.back(), 2u);
  EXPECT_EQ(server_primary_->depth, 0);
  ASSERT_TRUE(RunAllUntil([&] { return Done(calls[0]) && Done(calls[1]) && Done(calls[2]); }));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(calls[i]->message.AsStringView(), "re:q" + std::to_string(i));
  }
}

TEST_F(EngineBatchTest, AHandlerWithinTheHoldTimeDoesNotCutTheBatch) {
  AddServer();
  int sends = 0;
  const std::vector<int> seen = PollThreeRequests(Engine::kMaxBatchHoldNs / 4, &sends);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1], 0);
  EXPECT_EQ(seen[2], 0);
  EXPECT_EQ(sends, 1);
  EXPECT_EQ(server_net_->batch_sizes.back(), 3u);
}

// A host that only queues requests (wharfd) runs no handler inside Poll, so
// the engine neither times its handlers nor cuts the batch, however the
// clock moves meanwhile.
TEST_F(EngineBatchTest, AHostWithoutInlineHandlersNeverCutsTheBatch) {
  AddServer();
  sink_.runs_inline = false;
  int sends = 0;
  EXPECT_EQ(PollThreeRequests(2 * Engine::kMaxBatchHoldNs, &sends), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(sends, 1);
  EXPECT_EQ(server_net_->batch_sizes.back(), 3u);
}

TEST_F(EngineBatchTest, EngineBatchHoldsRequestsUntilEndBatch) {
  AddServer();
  // The server engine as a client this time: its own calls in its batch.
  testing::Node& b = AddNode("B");
  b.engine->SetHandler(kMethod, [](const RpcContext&, Buffer req) -> Result<Buffer> {
    return req;
  });
  std::vector<uint64_t> ops;
  const int sends = server_net_->send_calls;
  server_->BeginBatch();
  server_->BeginBatch();
  for (uint64_t i = 0; i < 4; ++i) {
    server_->Call(100 + i, b.uri, kMethod, Text("x"), kNever);
  }
  server_->EndBatch();
  EXPECT_EQ(server_net_->send_calls, sends) << "the inner EndBatch sent";
  server_->EndBatch();
  ASSERT_EQ(server_net_->send_calls, sends + 1);
  EXPECT_EQ(server_net_->batch_sizes.back(), 4u);
  // Unmatched: ignored, and the next call leaves at once.
  server_->EndBatch();
  EXPECT_EQ(server_primary_->depth, 0);
  server_->Call(200, b.uri, kMethod, Text("x"), kNever);
  EXPECT_EQ(server_net_->send_calls, sends + 2);
}

TEST_F(EngineBatchTest, ATransportOpenedInsideAnEngineBatchDoesNotBreakEndBatch) {
  // The second scheme is a second homa transport the opener makes on first
  // use, inside the batch.
  auto second_net = net_.Attach("S2", transport::NetAddress::Ipv4(0xC6120065, 4000));
  auto second_homa = homa::HomaTransport::Create(homa::HomaConfig{}, second_net.get(), clock_);
  ASSERT_TRUE(second_homa.ok());
  BatchCountingTransport second((*second_homa).get(), "homa2");
  int opened = 0;
  AddServer([&](std::string_view scheme) -> Result<transport::MessageTransport*> {
    if (scheme != "homa2") return InvalidArgumentError("no such scheme");
    ++opened;
    return &second;
  });
  testing::Node& b = AddNode("B");
  b.engine->SetHandler(kMethod, [](const RpcContext&, Buffer req) -> Result<Buffer> {
    return req;
  });
  const int sends = server_net_->send_calls;
  server_->BeginBatch();
  server_->Call(1, b.uri, kMethod, Text("via homa"), kNever);
  server_->Call(2, Uri{"homa2", b.addr}, kMethod, Text("via homa2"), kNever);
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(server_net_->send_calls, sends);
  server_->EndBatch();
  // The primary's batch ended and sent; the transport opened inside the
  // batch got no EndBatch it never began.
  EXPECT_EQ(server_net_->send_calls, sends + 1);
  EXPECT_EQ(server_primary_->depth, 0);
  EXPECT_EQ(second.depth, 0);
  EXPECT_EQ(second.begins, second.ends);
  // The next batch covers both transports.
  const int second_begins = second.begins;
  server_->BeginBatch();
  EXPECT_EQ(second.begins, second_begins + 1);
  server_->EndBatch();
  EXPECT_EQ(second.depth, 0);
  EXPECT_EQ(server_primary_->depth, 0);
  server_.reset();  // before `second`, which it borrows
}

// The priority of a call and of an answer reaches the transport, and so the
// packets (homa://: the unscheduled DATA); one outside 0..7 fails the call.
TEST_F(EngineBatchTest, ACallsAndAnAnswersPriorityReachThePackets) {
  AddServer();
  testing::Node& a = AddNode("A");
  auto data_priorities = [&](size_t from) {
    std::vector<uint8_t> out;
    for (size_t i = from; i < server_net_->sent.size(); ++i) {
      Result<wire::Packet> p = wire::Decode(server_net_->sent[i]);
      if (p.ok() && p->common.type == wire::PacketType::kData) {
        out.push_back(server_net_->priorities[i]);
      }
    }
    return out;
  };
  sink_.priority = 4;
  StatePtr call = a.engine->Call(server_uri(), kMethod, Text("q"), kNever);
  ASSERT_TRUE(RunAllUntil([&] { return Done(call); }));
  ASSERT_TRUE(call->status.ok()) << call->status;
  EXPECT_EQ(data_priorities(0), std::vector<uint8_t>{4});

  const size_t sent = server_net_->sent.size();
  server_->Call(1, a.uri, kMethod, Text("out"), kNever, {.priority = 5});
  server_->Call(2, a.uri, kMethod, Text("bad"), kNever, {.priority = 8});
  ASSERT_TRUE(RunAllUntil([&] { return sink_.completed.size() == 2; }));
  EXPECT_EQ(data_priorities(sent), std::vector<uint8_t>{5});
  ASSERT_EQ(sink_.completed[0].first, 2u);  // refused at once
  EXPECT_EQ(sink_.completed[0].second.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sink_.completed[0].second.message().find("priority 8"), std::string::npos)
      << sink_.completed[0].second;
}

}  // namespace
}  // namespace wharf::engine
