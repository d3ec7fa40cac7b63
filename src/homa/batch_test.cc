// Tests of HomaHost's send batching (BeginBatch / EndBatch) on FakeNetwork +
// SimClock: what a batch holds stays off the wire until the outermost
// EndBatch (or a Poll, or a full batch) and then leaves in one Send() call;
// the guards that keep a held gather send from pointing into a freed message
// (Cancel, a response arriving for a held request, closing an endpoint);
// endpoints closing, or their host dying, inside a batch; and the priority
// a caller chooses for a message, on the datagrams that carry it.
//
// Send() calls are counted by CountingDatagram, which also copies every
// datagram as it was handed over, so a test can check the bytes that went
// out. Requests whose bytes the test lends (Buffer::Wrap) are scribbled over
// when wharf releases them: a datagram sent from a freed message shows the
// scribble instead of the pattern.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"
#include "transport/datagram.h"
#include "transport/fake/counting_datagram.h"
#include "transport/fake/fake_network.h"
#include "wire/packet.h"

namespace wharf::homa {
namespace {

using transport::Datagram;
using transport::NetAddress;
using transport::OutDatagram;
using transport::fake::CountingDatagram;
using transport::fake::FakeDatagram;
using transport::fake::FakeNetwork;

constexpr uint16_t kClientEp = 1;
constexpr uint16_t kOtherClientEp = 2;
constexpr uint16_t kServerEp = wire::kDefaultEndpoint;
constexpr std::byte kScribble{0xDD};

std::byte PatternByte(size_t i) { return static_cast<std::byte>((i * 7 + 3) & 0xff); }

Buffer Pattern(size_t size) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) b.data()[i] = PatternByte(i);
  return b;
}

// The DATA packets among `datagrams`, decoded (payload views into them).
std::vector<wire::Packet> DataPackets(const std::vector<std::vector<std::byte>>& datagrams) {
  std::vector<wire::Packet> out;
  for (const auto& d : datagrams) {
    Result<wire::Packet> p = wire::Decode(d);
    if (p.ok() && p->common.type == wire::PacketType::kData) out.push_back(*p);
  }
  return out;
}

// True when every DATA payload in `datagrams` equals the pattern at its
// offset; `count` receives how many DATA packets there were.
testing::AssertionResult PayloadsIntact(const std::vector<std::vector<std::byte>>& datagrams,
                                        size_t* count) {
  *count = 0;
  for (const wire::Packet& p : DataPackets(datagrams)) {
    const auto& data = std::get<wire::Data>(p.body);
    ++*count;
    for (size_t i = 0; i < data.payload.size(); ++i) {
      if (data.payload[i] != PatternByte(data.header.offset + i)) {
        return testing::AssertionFailure()
               << "DATA @" << data.header.offset << " byte " << i << " is "
               << static_cast<int>(data.payload[i]) << ", not "
               << static_cast<int>(PatternByte(data.header.offset + i))
               << " (sent from a freed message?)";
      }
    }
  }
  return testing::AssertionSuccess();
}

// Test-owned memory lent to a request: when wharf releases it, it is
// scribbled over, so a send from it after that shows kScribble.
struct LentBytes {
  explicit LentBytes(size_t size) : bytes(size) {
    for (size_t i = 0; i < size; ++i) bytes[i] = PatternByte(i);
  }
  Buffer Lend() {
    return Buffer::Wrap(std::span<std::byte>(bytes), [this](std::span<std::byte> whole) {
      std::memset(whole.data(), static_cast<int>(kScribble), whole.size());
      released = true;
    });
  }
  std::vector<std::byte> bytes;
  bool released = false;
};

// A client host "C" (endpoints the test opens) and a server host "S" whose
// default endpoint echoes every request when Run() polls it.
class BatchWorld {
 public:
  BatchWorld() : clock_(0), net_(clock_, 1) {
    client_net_ = std::make_unique<CountingDatagram>(net_.Attach("C", Address(1)));
    server_net_ = std::make_unique<CountingDatagram>(net_.Attach("S", Address(2)));
    client_host_ = MustCreate(client_net_.get());
    server_host_ = MustCreate(server_net_.get());
    client_ = Open(*client_host_, kClientEp);
    server_ = Open(*server_host_, kServerEp);
  }

  static NetAddress Address(uint32_t n) {
    return NetAddress::Ipv4((198u << 24) | (18u << 16) | n, 4000);
  }
  std::unique_ptr<HomaHost> MustCreate(Datagram* net) {
    auto host = HomaHost::Create(HomaConfig{}, net, clock_);
    EXPECT_TRUE(host.ok()) << host.status();
    return host.ok() ? std::move(host).value() : nullptr;
  }
  static std::unique_ptr<HomaEndpoint> Open(HomaHost& host, uint16_t id) {
    auto ep = host.OpenEndpoint(id);
    EXPECT_TRUE(ep.ok()) << ep.status();
    return ep.ok() ? std::move(ep).value() : nullptr;
  }

  uint64_t Call(HomaEndpoint& from, size_t size) {
    return Call(from, Pattern(size));
  }
  uint64_t Call(HomaEndpoint& from, Buffer request) {
    auto id = from.SendRequestTo(server_net_->LocalAddress(), kServerEp, std::move(request));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : 0;
  }

  // Polls both hosts (the server echoes) and moves time until `responses`
  // responses arrived at the client endpoints, or 1 s of simulated time.
  bool RunUntilResponses(size_t responses) {
    const TimeNs end = clock_.NowNs() + kNsPerSec;
    while (done_.size() < responses && clock_.NowNs() < end) {
      for (int i = 0; i < 100 && PollOnce(); ++i) {
      }
      if (done_.size() >= responses) break;
      TimeNs next = std::min({clock_.NextDeadline(), client_->NextDeadline(),
                              server_->NextDeadline()});
      clock_.AdvanceTo(std::min(end, std::max(next, clock_.NowNs() + 1)));
    }
    return done_.size() >= responses;
  }

  // Polls both hosts while `duration` of simulated time passes.
  void PassTime(DurationNs duration) {
    const TimeNs end = clock_.NowNs() + duration;
    while (clock_.NowNs() < end) {
      while (PollOnce()) {
      }
      clock_.AdvanceTo(std::min(end, clock_.NowNs() + 100 * kNsPerUs));
    }
    while (PollOnce()) {
    }
  }

  bool PollOnce() {
    bool any = server_->Poll().work > 0;
    HomaEvent e;
    while (server_->PopEvent(&e)) {
      any = true;
      if (e.kind == HomaEvent::Kind::kRequest) {
        EXPECT_TRUE(
            server_->SendResponse(e.server_key, std::move(e.message), response_priority).ok());
      }
    }
    for (HomaEndpoint* ep : {client_.get(), other_client_.get()}) {
      if (ep == nullptr) continue;
      any |= ep->Poll().work > 0;
      while (ep->PopEvent(&e)) {
        any = true;
        done_.push_back(std::move(e));
      }
    }
    return any;
  }

  SimClock clock_;
  FakeNetwork net_;
  std::unique_ptr<CountingDatagram> client_net_;
  std::unique_ptr<CountingDatagram> server_net_;
  std::unique_ptr<HomaHost> client_host_;
  std::unique_ptr<HomaHost> server_host_;
  std::unique_ptr<HomaEndpoint> client_;
  std::unique_ptr<HomaEndpoint> other_client_;
  std::unique_ptr<HomaEndpoint> server_;
  std::vector<HomaEvent> done_;
  // What the echoing server answers at.
  transport::MessagePriority response_priority = transport::kPriorityBySize;
};

uint64_t Counter(const HomaHost& host, const std::string& name) {
  for (const auto& [key, value] : host.Counters()) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

// ------------------------------------------------------- holding and sending

TEST(HomaBatchTest, WithoutABatchARequestIsOnTheWireWhenSendRequestReturns) {
  BatchWorld w;
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 1);
  EXPECT_EQ(w.net_.TotalCounters().sent, 1u);
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 2);
  EXPECT_EQ(Counter(*w.client_host_, "homa.batched_flushes"), 0u);
}

TEST(HomaBatchTest, RequestsInABatchLeaveTogetherInOneSendAtEndBatch) {
  BatchWorld w;
  w.client_->BeginBatch();
  for (int i = 0; i < 5; ++i) {
    w.Call(*w.client_, 100 + i);
    EXPECT_EQ(w.client_net_->send_calls, 0) << "request " << i << " left before EndBatch";
  }
  EXPECT_EQ(w.net_.TotalCounters().sent, 0u);
  w.client_->EndBatch();
  ASSERT_EQ(w.client_net_->send_calls, 1);
  EXPECT_EQ(w.client_net_->batch_sizes[0], 5u);
  EXPECT_EQ(w.net_.TotalCounters().sent, 5u);
  EXPECT_EQ(Counter(*w.client_host_, "homa.batched_flushes"), 1u);
  EXPECT_EQ(Counter(*w.client_host_, "homa.packets_sent"), 5u);
  ASSERT_TRUE(w.RunUntilResponses(5));
  for (const HomaEvent& e : w.done_) EXPECT_EQ(e.kind, HomaEvent::Kind::kResponse) << e.status;
}

TEST(HomaBatchTest, ResponsesInABatchLeaveTogetherInOneSendAtEndBatch) {
  BatchWorld w;
  for (int i = 0; i < 4; ++i) w.Call(*w.client_, 200);
  // Deliver the requests to the server without answering them.
  std::vector<HomaEvent> requests;
  for (int step = 0; step < 100 && requests.size() < 4; ++step) {
    w.clock_.AdvanceTo(w.clock_.NowNs() + kNsPerUs);
    w.server_->Poll();
    HomaEvent e;
    while (w.server_->PopEvent(&e)) requests.push_back(std::move(e));
  }
  ASSERT_EQ(requests.size(), 4u);
  const int calls_before = w.server_net_->send_calls;
  w.server_->BeginBatch();
  for (HomaEvent& e : requests) {
    ASSERT_TRUE(w.server_->SendResponse(e.server_key, std::move(e.message)).ok());
    EXPECT_EQ(w.server_net_->send_calls, calls_before);
  }
  w.server_->EndBatch();
  ASSERT_EQ(w.server_net_->send_calls, calls_before + 1);
  EXPECT_EQ(w.server_net_->batch_sizes.back(), 4u);
  EXPECT_EQ(Counter(*w.server_host_, "homa.batched_flushes"), 1u);
  ASSERT_TRUE(w.RunUntilResponses(4));
}

TEST(HomaBatchTest, NestedBatchesSendOnlyAtTheOutermostEndBatch) {
  BatchWorld w;
  w.client_->BeginBatch();
  w.Call(*w.client_, 100);
  w.client_->BeginBatch();
  w.Call(*w.client_, 100);
  w.client_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, 0) << "the inner EndBatch sent";
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 0);
  w.client_->EndBatch();
  ASSERT_EQ(w.client_net_->send_calls, 1);
  EXPECT_EQ(w.client_net_->batch_sizes[0], 3u);
  EXPECT_EQ(Counter(*w.client_host_, "homa.batched_flushes"), 1u);
  // Nesting across the host and an endpoint counts the same.
  w.client_host_->BeginBatch();
  w.client_->BeginBatch();
  w.Call(*w.client_, 100);
  w.client_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, 1);
  w.client_host_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, 2);
}

TEST(HomaBatchTest, AnUnmatchedEndBatchIsHarmless) {
  BatchWorld w;
  w.client_->EndBatch();
  w.client_host_->EndBatch();
  w.client_host_->EndBatch();
  // Not left at a negative depth (which a BeginBatch would only bring to 0,
  // or a counter that would make the next Begin a no-op): a request still
  // leaves at once, and a batch still holds.
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 1);
  w.client_->BeginBatch();
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 1);
  w.client_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, 2);
  // The host's batch, opened by the host, is not ended by an endpoint's
  // unmatched EndBatch.
  w.client_host_->BeginBatch();
  w.client_->EndBatch();
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 2);
  w.client_host_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, 3);
  EXPECT_EQ(Counter(*w.client_host_, "homa.batched_flushes"), 2u);
}

TEST(HomaBatchTest, PollSendsWhatTheBatchHolds) {
  BatchWorld w;
  w.client_->BeginBatch();
  w.Call(*w.client_, 100);
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 0);
  w.client_->Poll();
  ASSERT_EQ(w.client_net_->send_calls, 1);
  EXPECT_EQ(w.client_net_->batch_sizes[0], 2u);
  // The batch is still open: the next request waits again.
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 1);
  w.client_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, 2);
  ASSERT_TRUE(w.RunUntilResponses(3));
}

TEST(HomaBatchTest, TheHeadOfAHeldBatchLeavesAtOnceAndTheRestAtEndBatch) {
  BatchWorld w;
  w.client_->BeginBatch();
  for (int i = 0; i < 15; ++i) w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 0);
  w.Call(*w.client_, 100);  // the 16th packet: the head leaves
  ASSERT_EQ(w.client_net_->send_calls, 1);
  EXPECT_EQ(w.client_net_->batch_sizes[0], 16u);
  EXPECT_EQ(Counter(*w.client_host_, "homa.batch_cuts"), 1u);
  // Once per batch: the next 16 wait for EndBatch.
  for (int i = 0; i < 16; ++i) w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 1);
  w.client_->EndBatch();
  ASSERT_EQ(w.client_net_->send_calls, 2);
  EXPECT_EQ(w.client_net_->batch_sizes[1], 16u);
  // A new batch cuts its head again, once it is half the live RPCs: the 32
  // unanswered ones and its own.
  w.client_->BeginBatch();
  for (int i = 0; i < 30; ++i) w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 2);
  w.Call(*w.client_, 100);  // 31 held, 63 live
  ASSERT_EQ(w.client_net_->send_calls, 3);
  EXPECT_EQ(w.client_net_->batch_sizes[2], 31u);
  w.client_->EndBatch();
  EXPECT_EQ(Counter(*w.client_host_, "homa.batch_cuts"), 2u);
  ASSERT_TRUE(w.RunUntilResponses(63));
}

TEST(HomaBatchTest, TheHeadIsAtMostOneTransmitBatch) {
  BatchWorld w;
  // 200 RPCs unanswered: half of them would be more than one send carries.
  w.client_->BeginBatch();
  for (int i = 0; i < 200; ++i) w.Call(*w.client_, 100);
  w.client_->EndBatch();
  const size_t before = w.client_net_->send_calls;
  w.client_->BeginBatch();
  for (int i = 0; i < 63; ++i) w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, before);
  w.Call(*w.client_, 100);
  ASSERT_EQ(w.client_net_->send_calls, before + 1);
  EXPECT_EQ(w.client_net_->batch_sizes[before], 64u);
  w.client_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, before + 1);
  ASSERT_TRUE(w.RunUntilResponses(264));
}

TEST(HomaBatchTest, TheHeadShrinksBackTwoTicksAfterTheWindowDid) {
  BatchWorld w;
  w.client_->BeginBatch();
  for (int i = 0; i < 100; ++i) w.Call(*w.client_, 100);
  w.client_->EndBatch();
  ASSERT_TRUE(w.RunUntilResponses(100));
  // Two ticks (1 ms each) later the peak of 100 is forgotten: a lone burst
  // of 16 has its head cut at 16 again, not held for 50.
  w.PassTime(3 * kNsPerMs);
  const size_t before = w.client_net_->send_calls;
  w.client_->BeginBatch();
  for (int i = 0; i < 16; ++i) w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, before + 1);
  w.client_->EndBatch();
  ASSERT_TRUE(w.RunUntilResponses(116));
}

TEST(HomaBatchTest, AnsweredRpcsAwaitingTheirAckAreNoPartOfTheWindow) {
  BatchWorld w;
  w.client_->BeginBatch();
  for (int i = 0; i < 40; ++i) w.Call(*w.client_, 100);
  w.client_->EndBatch();
  // The server answers all 40 before the client hears of any: it keeps each
  // RPC until its client acks it, but none of them is unanswered.
  size_t answered = 0;
  HomaEvent e;
  for (int i = 0; i < 100 && answered < 40; ++i) {
    w.clock_.AdvanceTo(w.clock_.NowNs() + 10 * kNsPerUs);
    w.server_->Poll();
    while (w.server_->PopEvent(&e)) {
      ASSERT_EQ(e.kind, HomaEvent::Kind::kRequest);
      ASSERT_TRUE(w.server_->SendResponse(e.server_key, std::move(e.message)).ok());
      ++answered;
    }
  }
  ASSERT_EQ(answered, 40u);
  EXPECT_EQ(w.server_host_->num_server_rpcs(), 40u);
  EXPECT_EQ(w.server_host_->unanswered_rpcs(), 0u);
  EXPECT_EQ(w.client_host_->unanswered_rpcs(), 40u);
  ASSERT_TRUE(w.RunUntilResponses(40));
  EXPECT_EQ(w.client_host_->unanswered_rpcs(), 0u);
  w.PassTime(3 * kNsPerMs);  // the acks free the server's RPCs
  EXPECT_EQ(w.server_host_->num_server_rpcs(), 0u);
  EXPECT_EQ(w.server_host_->unanswered_rpcs(), 0u);
}

TEST(HomaBatchTest, AFullBatchIsSentWithoutWaitingForEndBatch) {
  BatchWorld w;
  w.client_->BeginBatch();
  for (int i = 0; i < 100; ++i) w.Call(*w.client_, 100);
  // The head (16), then 64 datagrams fill the transmit batch (kTxBatch).
  ASSERT_EQ(w.client_net_->send_calls, 2);
  EXPECT_EQ(w.client_net_->batch_sizes[0], 16u);
  EXPECT_EQ(w.client_net_->batch_sizes[1], 64u);
  w.client_->EndBatch();
  ASSERT_EQ(w.client_net_->send_calls, 3);
  EXPECT_EQ(w.client_net_->batch_sizes[2], 20u);
  ASSERT_TRUE(w.RunUntilResponses(100));
}

TEST(HomaBatchTest, EndBatchWithNothingHeldIsNotCountedAsABatchedFlush) {
  BatchWorld w;
  w.client_->BeginBatch();
  w.client_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, 0);
  EXPECT_EQ(Counter(*w.client_host_, "homa.batched_flushes"), 0u);
  w.client_->BeginBatch();
  w.Call(*w.client_, 100);
  w.client_->Poll();  // sends it: EndBatch then finds nothing
  w.client_->EndBatch();
  EXPECT_EQ(Counter(*w.client_host_, "homa.batched_flushes"), 0u);
}

// ------------------------------------------- borrowed payloads (gather sends)

TEST(HomaBatchTest, CancelOfAHeldLargeRequestSendsItsIntactBytesFirst) {
  BatchWorld w;
  // 3 packets of up to 1424 payload bytes: each > 512, so sent in place.
  LentBytes lent(4000);
  w.client_->BeginBatch();
  const uint64_t id = w.Call(*w.client_, lent.Lend());
  EXPECT_EQ(w.client_net_->send_calls, 0);
  ASSERT_TRUE(w.client_->Cancel(id));
  EXPECT_TRUE(lent.released);
  // The held packets left before the request's bytes were released, and
  // carried them, not the scribble.
  ASSERT_GE(w.client_net_->send_calls, 1);
  size_t data_packets = 0;
  EXPECT_TRUE(PayloadsIntact(w.client_net_->sent, &data_packets));
  EXPECT_EQ(data_packets, 3u);
  w.client_->EndBatch();
  // Nothing sent later reads the freed request either.
  EXPECT_TRUE(PayloadsIntact(w.client_net_->sent, &data_packets));
  EXPECT_EQ(data_packets, 3u);
}

TEST(HomaBatchTest, ResponseArrivingWhileItsRequestIsHeldSendsTheIntactRequestFirst) {
  // Reachable only through a Poll inside an open batch: Poll handles what
  // arrived before it sends what the batch holds, so a response (here one
  // forged by a peer that answers requests it never got; a legitimate server
  // answers only once it holds the whole request) can meet its request still
  // held. The response frees the request; the held packets must have left
  // before that.
  SimClock clock(0);
  FakeNetwork net(clock, 1);
  auto client_net = std::make_unique<CountingDatagram>(net.Attach("C", BatchWorld::Address(1)));
  std::unique_ptr<FakeDatagram> forger = net.Attach("S", BatchWorld::Address(2));
  auto host = HomaHost::Create(HomaConfig{}, client_net.get(), clock);
  ASSERT_TRUE(host.ok());
  auto ep = (*host)->OpenEndpoint(kClientEp);
  ASSERT_TRUE(ep.ok());
  HomaEndpoint& client = **ep;

  LentBytes lent(4000);
  client.BeginBatch();
  auto id = client.SendRequestTo(forger->LocalAddress(), kServerEp, lent.Lend());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(client_net->send_calls, 0);

  // The first packet of a two-packet response (so the RPC stays alive and
  // only the request is freed).
  std::vector<std::byte> payload(1000, std::byte{0x42});
  wire::Packet response;
  response.common.type = wire::PacketType::kData;
  response.common.sport = kServerEp;
  response.common.dport = kClientEp;
  response.common.rpc_id = *id ^ 1;
  wire::Data data;
  data.header.message_length = 2000;
  data.header.offset = 0;
  data.header.incoming = 2000;
  data.payload = payload;
  response.body = data;
  std::vector<std::byte> bytes(wire::kDataHeaderBytes + payload.size());
  auto size = wire::Encode(response, bytes);
  ASSERT_TRUE(size.ok()) << size.status();
  bytes.resize(*size);
  OutDatagram out{client_net->LocalAddress(), bytes};
  ASSERT_TRUE(forger->Send(std::span(&out, 1)).ok());
  clock.AdvanceTo(clock.NowNs() + 10 * kNsPerUs);

  client.Poll();
  EXPECT_TRUE(lent.released) << "the response did not end the request";
  size_t data_packets = 0;
  EXPECT_TRUE(PayloadsIntact(client_net->sent, &data_packets));
  EXPECT_EQ(data_packets, 3u);
  client.EndBatch();
  EXPECT_TRUE(PayloadsIntact(client_net->sent, &data_packets));
  EXPECT_EQ(data_packets, 3u);
}

TEST(HomaBatchTest, ClosingAnEndpointInsideItsBatchSendsWhatItHeldAndReleasesTheHost) {
  BatchWorld w;
  w.other_client_ = BatchWorld::Open(*w.client_host_, kOtherClientEp);
  LentBytes lent(4000);
  w.client_->BeginBatch();
  w.client_->BeginBatch();  // nested: Close ends both
  w.Call(*w.client_, lent.Lend());
  EXPECT_EQ(w.client_net_->send_calls, 0);
  w.client_.reset();  // closes it
  EXPECT_GE(w.client_net_->send_calls, 1) << "closing dropped what the batch held";
  size_t data_packets = 0;
  EXPECT_TRUE(PayloadsIntact(w.client_net_->sent, &data_packets));
  EXPECT_EQ(data_packets, 3u);
  // The host holds nothing for the closed endpoint: another endpoint's
  // request leaves at once.
  const int calls = w.client_net_->send_calls;
  w.Call(*w.other_client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, calls + 1);
}

TEST(HomaBatchTest, ClosingAnEndpointKeepsAnotherEndpointsBatchOpen) {
  BatchWorld w;
  w.other_client_ = BatchWorld::Open(*w.client_host_, kOtherClientEp);
  w.other_client_->BeginBatch();
  w.client_->BeginBatch();
  // Held by both batches; closing its endpoint sends it all the same
  // (CloseEndpoint flushes what the endpoint asked to send).
  w.Call(*w.client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, 0);
  w.client_->Close();
  EXPECT_EQ(w.client_net_->send_calls, 1);
  EXPECT_EQ(DataPackets(w.client_net_->sent).size(), 1u);
  // Calls on a closed endpoint fail; its EndBatch is ignored.
  w.client_->EndBatch();
  w.client_->BeginBatch();
  w.client_->EndBatch();
  const int calls = w.client_net_->send_calls;
  w.Call(*w.other_client_, 100);
  EXPECT_EQ(w.client_net_->send_calls, calls) << "the other endpoint's batch was ended";
  w.other_client_->EndBatch();
  EXPECT_EQ(w.client_net_->send_calls, calls + 1);
}

TEST(HomaBatchTest, DestroyingTheHostInsideAnEndpointsBatchIsSafe) {
  BatchWorld w;
  LentBytes lent(4000);
  w.client_->BeginBatch();
  w.Call(*w.client_, lent.Lend());
  EXPECT_EQ(w.client_net_->send_calls, 0);
  w.client_host_.reset();
  // The held packets went out as the host closed the endpoint, intact.
  EXPECT_GE(w.client_net_->send_calls, 1);
  size_t data_packets = 0;
  EXPECT_TRUE(PayloadsIntact(w.client_net_->sent, &data_packets));
  EXPECT_EQ(data_packets, 3u);
  EXPECT_EQ(w.client_->host(), nullptr);
  // The endpoint outlived its host: batching calls are no-ops.
  w.client_->EndBatch();
  w.client_->BeginBatch();
  w.client_->EndBatch();
  EXPECT_FALSE(w.client_->SendRequestTo(w.server_net_->LocalAddress(), kServerEp, Pattern(10))
                   .ok());
  w.client_.reset();
}

// The priorities of the DATA packets among what `net` sent from `from` on.
std::vector<uint8_t> DataPriorities(const CountingDatagram& net, size_t from) {
  std::vector<uint8_t> out;
  for (size_t i = from; i < net.sent.size(); ++i) {
    Result<wire::Packet> p = wire::Decode(net.sent[i]);
    if (p.ok() && p->common.type == wire::PacketType::kData) out.push_back(net.priorities[i]);
  }
  return out;
}

// A message sent at a chosen priority carries it on all its unscheduled
// packets, request and response alike, whatever the receiver's cutoffs say
// of its length; by size, a short message goes at the top level (7).
TEST(MessagePriorityTest, AChosenPriorityIsOnEveryUnscheduledPacket) {
  BatchWorld w;
  w.response_priority = 3;
  auto id = w.client_->SendRequestTo(w.server_net_->LocalAddress(), kServerEp, Pattern(3000),
                                     /*cookie=*/0, {.priority = 2});
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(w.RunUntilResponses(1));
  EXPECT_EQ(DataPriorities(*w.client_net_, 0), (std::vector<uint8_t>{2, 2, 2}));
  EXPECT_EQ(DataPriorities(*w.server_net_, 0), (std::vector<uint8_t>{3, 3, 3}));

  const size_t client_sent = w.client_net_->sent.size();
  const size_t server_sent = w.server_net_->sent.size();
  w.response_priority = transport::kPriorityBySize;
  w.Call(*w.client_, 100);
  ASSERT_TRUE(w.RunUntilResponses(2));
  EXPECT_EQ(DataPriorities(*w.client_net_, client_sent), (std::vector<uint8_t>{7}));
  EXPECT_EQ(DataPriorities(*w.server_net_, server_sent), (std::vector<uint8_t>{7}));
}

TEST(MessagePriorityTest, APriorityOutsideZeroToSevenIsRefused) {
  BatchWorld w;
  for (transport::MessagePriority bad : {8, -2}) {
    auto id = w.client_->SendRequestTo(w.server_net_->LocalAddress(), kServerEp, Pattern(10),
                                       /*cookie=*/0, {.priority = bad});
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(id.status().message().find("outside 0..7"), std::string::npos) << id.status();
  }
  EXPECT_TRUE(w.client_net_->sent.empty());
}

// A request sent with stamp_departure asks the socket to stamp its first
// packet only (its token is the RPC's id), and the response's event carries
// the stamp; a request without it asks nothing and carries 0.
TEST(DepartureStampTest, TheResponseCarriesWhenItsRequestLeft) {
  BatchWorld w;
  w.client_net_->inner().set_departure_delay(7 * kNsPerUs);
  const TimeNs sent_at = w.clock_.NowNs();
  auto stamped = w.client_->SendRequestTo(w.server_net_->LocalAddress(), kServerEp, Pattern(3000),
                                          /*cookie=*/1, {.stamp_departure = true});
  ASSERT_TRUE(stamped.ok()) << stamped.status();
  auto plain = w.client_->SendRequestTo(w.server_net_->LocalAddress(), kServerEp, Pattern(100),
                                        /*cookie=*/2);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(w.RunUntilResponses(2));
  for (const HomaEvent& e : w.done_) {
    ASSERT_EQ(e.kind, HomaEvent::Kind::kResponse);
    EXPECT_EQ(e.sent_ns, e.cookie == 1 ? sent_at + 7 * kNsPerUs : 0) << "cookie " << e.cookie;
  }
  // Only the stamped request's first packet asked, with the RPC's id.
  std::vector<uint64_t> tokens;
  for (uint64_t t : w.client_net_->tokens) {
    if (t != 0) tokens.push_back(t);
  }
  EXPECT_EQ(tokens, std::vector<uint64_t>{*stamped});
  // Nothing else asked: no departure is left over.
  std::vector<transport::Departure> rest(4);
  EXPECT_EQ(w.client_net_->TakeDepartures(rest), 0u);
}

}  // namespace
}  // namespace wharf::homa
