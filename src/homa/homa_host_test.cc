// Tests of HomaHost with several endpoints on one socket, on FakeNetwork +
// SimClock: dispatch by dport, SRPT grants and sends ranked across endpoints,
// ack floors per endpoint pair, unknown endpoint ids, opening and closing;
// and the decisions of the host's parts (grant scheduler, timer) put on the
// wire, as packet logs.
// The single-endpoint protocol is tested through HomaTransport in
// homa_transport_test.cc, handlers_test.cc and timer_test.cc; receives
// placed in an endpoint's allocator in homa_host_receive_test.cc.
#include "homa/homa_host.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "homa/homa_endpoint.h"
#include "homa/testing/host_world.h"
#include "homa/testing/scenario.h"
#include "transport/fake/fake_network.h"
#include "transport/fake/packet_predicate.h"
#include "wire/endpoint_id.h"
#include "wire/packet.h"

namespace wharf::homa {
namespace {

using namespace host_world;  // the fixture: World, Inbox, kA, kB, kSecond

// ------------------------------------------------------------- opening

TEST(HomaHostTest, OpenEndpointRefusesAnIdAlreadyOpen) {
  World w;
  HomaHost& host = w.AddHost("H");
  auto first = host.OpenEndpoint(kA);
  ASSERT_TRUE(first.ok());
  auto again = host.OpenEndpoint(kA);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("endpoint 1 is already open"), std::string::npos)
      << again.status();
  EXPECT_EQ(host.num_endpoints(), 1u);
  // Closing frees the id.
  first->reset();
  EXPECT_EQ(host.num_endpoints(), 0u);
  EXPECT_TRUE(host.OpenEndpoint(kA).ok());
}

TEST(HomaHostTest, OpenEndpointByNameTakesTheIdDerivedFromIt) {
  World w;
  HomaHost& host = w.AddHost("H");
  auto kv = host.OpenEndpoint(std::string_view("kv"));
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ((*kv)->endpoint_id(), wire::EndpointIdForName("kv"));
  auto twice = host.OpenEndpoint(std::string_view("kv"));
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(twice.status().message().find("'kv'"), std::string::npos) << twice.status();
  // The empty name is the default endpoint.
  auto fallback = host.OpenEndpoint(std::string_view(""));
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ((*fallback)->endpoint_id(), wire::kDefaultEndpoint);
}

TEST(HomaHostTest, CreateMakesOneDefaultEndpointOwningItsHost) {
  World w;
  w.AddHost("S");  // a server for the single-endpoint transport to call
  w.Open("S", wire::kDefaultEndpoint);
  auto net = w.net().Attach("solo", transport::NetAddress::Ipv4(0xC6120063, 4000));
  auto solo = HomaTransport::Create(HomaConfig{}, net.get(), w.clock());
  ASSERT_TRUE(solo.ok());
  EXPECT_EQ((*solo)->endpoint_id(), wire::kDefaultEndpoint);
  ASSERT_NE((*solo)->host(), nullptr);
  EXPECT_EQ((*solo)->host()->num_endpoints(), 1u);
  auto id = (*solo)->SendRequest(w.address("S"), Scenario::Pattern(10));
  ASSERT_TRUE(id.ok());
  HomaEvent event;
  ASSERT_TRUE(w.RunUntil(
      [&] {
        (*solo)->Poll();
        return (*solo)->PopEvent(&event);
      },
      kSecond));
  EXPECT_EQ(event.kind, HomaEvent::Kind::kResponse);
  EXPECT_TRUE(Scenario::MatchesPattern(event.message, 10));
}

// ------------------------------------------------------------ dispatch

TEST(HomaHostTest, RequestsReachTheEndpointTheirDportNames) {
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", wire::kDefaultEndpoint);
  w.Open("S", kA);
  w.Open("S", kB);
  uint64_t to_a = w.Call("C", 0, "S", kA, 100);
  uint64_t to_b = w.Call("C", 0, "S", kB, 200);
  Inbox& client = w.inbox("C", 0);
  ASSERT_TRUE(w.RunUntil([&] { return client.done.size() == 2; }, kSecond));
  EXPECT_EQ(w.inbox("S", kA).requests, 1);
  EXPECT_EQ(w.inbox("S", kB).requests, 1);
  EXPECT_TRUE(Scenario::MatchesPattern(client.done.at(to_a).message, 100));
  EXPECT_TRUE(Scenario::MatchesPattern(client.done.at(to_b).message, 200));
  // One socket, one peer entry for the client, both endpoints served.
  EXPECT_EQ(w.host("S").num_peers(), 1u);
  w.RunFor(20 * kNsPerMs);  // acks
  EXPECT_EQ(w.host("S").num_server_rpcs(), 0u);
  EXPECT_EQ(w.ep("S", kA).num_server_rpcs(), 0u);
}

// ------------------------------------------------- SRPT across endpoints

// The receiver's grant scheduler is the host's: once a short message to B
// arrives, a long one to A already being granted gets no more grants until
// the short one is done (overcommit 1), although they are for different
// endpoints and come from different peers.
TEST(HomaHostTest, GrantsRankMessagesOfAllEndpointsTogether) {
  HomaConfig config;
  config.unsched_bytes = 1424;
  config.overcommit = 1;
  config.max_incoming_bytes = 8 * 1424;  // small windows: grants flow all along
  config.grant_fifo_permille = 0;
  World w;
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 10'000'000'000;
  w.net().SetDefaultLink(link);
  w.AddHost("long", config);
  w.AddHost("short", config);
  w.AddHost("R", config);
  w.Open("long", 0);
  w.Open("short", 0);
  w.Open("R", kA);
  w.Open("R", kB);
  w.net().SetLogFilter(DescriptionStartsWithAnyOf({"GRANT"}));
  w.Call("long", 0, "R", kA, 2'000'000);
  w.RunFor(200 * kNsPerUs);  // the long message is under way, being granted
  const size_t grants_before = w.net().LogLines().size();
  ASSERT_GT(grants_before, 0u);
  w.Call("short", 0, "R", kB, 30'000);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("R", kB).requests == 1; }, kSecond));
  // From the short message's first grant until its last, no grant raised the
  // long one's offset (a repeated offset would be a keep-alive).
  const std::vector<std::string> lines = w.net().LogLines();
  size_t first_short = lines.size(), last_short = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].starts_with("R->short GRANT")) continue;
    first_short = std::min(first_short, i);
    last_short = i;
  }
  ASSERT_LT(first_short, lines.size());
  uint64_t long_offset = 0;
  int long_raised_meanwhile = 0;
  for (size_t i = 0; i <= last_short; ++i) {
    if (!lines[i].starts_with("R->long GRANT")) continue;
    uint64_t offset = std::stoull(lines[i].substr(std::string("R->long GRANT ").size()));
    if (offset > long_offset && i > first_short) ++long_raised_meanwhile;
    long_offset = std::max(long_offset, offset);
  }
  EXPECT_EQ(long_raised_meanwhile, 0);
  // The short one was delivered first; both arrive intact (echoed back).
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("long", 0).done.size() == 1; }, 10 * kSecond));
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("short", 0).done.size() == 1; }, kSecond));
  EXPECT_LT(IndexOf(w.order(), "R/2 req 30000"), IndexOf(w.order(), "R/1 req 2000000"));
  EXPECT_TRUE(Scenario::MatchesPattern(w.inbox("long", 0).done.begin()->second.message, 2'000'000));
  EXPECT_TRUE(Scenario::MatchesPattern(w.inbox("short", 0).done.begin()->second.message, 30'000));
}

TEST(HomaHostTest, ShortMessageToOneEndpointOvertakesLongOneToAnother) {
  World w;
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 10'000'000'000;
  w.net().SetDefaultLink(link);
  w.AddHost("C");
  w.AddHost("R");
  w.Open("C", 0);
  w.Open("R", kA);
  w.Open("R", kB);
  w.Call("C", 0, "R", kA, 2'000'000);
  w.RunFor(100 * kNsPerUs);
  w.Call("C", 0, "R", kB, 1'000);
  Inbox& client = w.inbox("C", 0);
  ASSERT_TRUE(w.RunUntil([&] { return client.done.size() == 2; }, 10 * kSecond));
  EXPECT_LT(IndexOf(w.order(), "R/2 req 1000"), IndexOf(w.order(), "R/1 req 2000000"));
  for (const auto& [id, event] : client.done) {
    ASSERT_EQ(event.kind, HomaEvent::Kind::kResponse);
    EXPECT_TRUE(Scenario::MatchesPattern(event.message, event.message.size()));
  }
}

// The sender's SRPT queue is the host's too: a long request from endpoint A,
// held back by the pacer, yields to a shorter one endpoint B queues after
// it. (5 KB: over homa.pacer_bypass_bytes, so it waits for the pacer like
// the long one and only the queue's order lets it go first.)
TEST(HomaHostTest, SendQueueRanksMessagesOfAllEndpointsTogether) {
  HomaConfig config;
  config.link_bps = 1'000'000'000;  // slow: the pacer holds the long one back
  config.max_nic_backlog_ns = 5 * kNsPerUs;  // after about one packet
  World w;
  w.AddHost("C", config);
  w.AddHost("S1", config);
  w.AddHost("S2", config);
  w.Open("C", kA);
  w.Open("C", kB);
  w.Open("S1", 0);
  w.Open("S2", 0);
  w.net().SetLogFilter(DescriptionStartsWithAnyOf({"DATA"}));
  w.Call("C", kA, "S1", 0, 200'000);
  w.Call("C", kB, "S2", 0, 5'000);
  auto count_long = [&](const std::vector<std::string>& lines, size_t upto) {
    int n = 0;
    for (size_t i = 0; i < upto && i < lines.size(); ++i) n += lines[i].starts_with("C->S1 DATA");
    return n;
  };
  const int long_sent_before = count_long(w.net().LogLines(), SIZE_MAX);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kB).done.size() == 1; }, kSecond));
  const std::vector<std::string> lines = w.net().LogLines();
  size_t last_short = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with("C->S2 DATA")) last_short = i;
  }
  // Not one more packet of the long request left before the short one's last.
  EXPECT_EQ(count_long(lines, last_short), long_sent_before);
  EXPECT_LE(long_sent_before, 2);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kA).done.size() == 1; }, 10 * kSecond));
  EXPECT_TRUE(Scenario::MatchesPattern(w.inbox("C", kA).done.begin()->second.message, 200'000));
}

// ----------------------------------------------- floors per endpoint pair

// One client endpoint calls server endpoints A and B on one host with
// interleaved ids. A answers at once, B holds its requests: the floors the
// client reports to A (which pass B's ids) must not release or tombstone
// B's RPCs, which are another pair of endpoints' business.
TEST(HomaHostTest, FloorForOneServerEndpointNeverReleasesAnothersRpc) {
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", 0);
  w.Open("S", kA);
  w.Open("S", kB);
  w.inbox("S", kB).echo = false;
  std::vector<uint64_t> to_b;
  std::vector<uint64_t> to_a;
  for (int i = 0; i < 3; ++i) {
    to_b.push_back(w.Call("C", 0, "S", kB, 100));
    to_a.push_back(w.Call("C", 0, "S", kA, 100));
    ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", 0).done.contains(to_a.back()); }, kSecond));
  }
  // More calls to A: their DATA carry a floor for A above every id of B's.
  for (int i = 0; i < 3; ++i) {
    to_a.push_back(w.Call("C", 0, "S", kA, 100));
    ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", 0).done.contains(to_a.back()); }, kSecond));
  }
  w.RunFor(50 * kNsPerMs);  // ACKs and floors reach S and are applied
  EXPECT_EQ(w.ep("S", kA).num_server_rpcs(), 0u);
  ASSERT_EQ(w.ep("S", kB).num_server_rpcs(), 3u);
  Inbox& b = w.inbox("S", kB);
  ASSERT_EQ(b.held.size(), 3u);
  for (HomaEvent& held : b.held) {
    EXPECT_TRUE(w.ep("S", kB).SendResponse(held.server_key, std::move(held.message)).ok());
  }
  ASSERT_TRUE(w.RunUntil(
      [&] {
        for (uint64_t id : to_b) {
          if (!w.inbox("C", 0).done.contains(id)) return false;
        }
        return true;
      },
      kSecond));
  for (uint64_t id : to_b) {
    EXPECT_EQ(w.inbox("C", 0).done.at(id).kind, HomaEvent::Kind::kResponse);
  }
  EXPECT_EQ(b.requests, 3);  // each ran once
  EXPECT_EQ(w.host("S").stats().late_duplicates, 0u);
  w.RunFor(50 * kNsPerMs);
  EXPECT_EQ(w.host("S").num_server_rpcs(), 0u);  // acked: freed
}

// The client side of the same rule: the floor an endpoint reports is its
// own. Client endpoint A's RPC to S stays unfinished; client endpoint B's
// calls to S finish, and the floor B reports (above A's id) must not make S
// take A's request, still arriving, for a finished one.
TEST(HomaHostTest, FloorOfOneClientEndpointNeverCoversAnothersRpc) {
  HomaConfig config;
  config.unsched_bytes = 1424;
  World w;
  transport::fake::LinkConfig link;
  link.bandwidth_bps = 1'000'000'000;
  w.net().SetDefaultLink(link);
  w.AddHost("C", config);
  w.AddHost("S", config);
  w.Open("C", kA);
  w.Open("C", kB);
  w.Open("S", 0);
  uint64_t slow = w.Call("C", kA, "S", 0, 500'000);
  for (int i = 0; i < 5; ++i) {
    uint64_t quick = w.Call("C", kB, "S", 0, 100);
    ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kB).done.contains(quick); }, kSecond));
  }
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kA).done.contains(slow); }, 10 * kSecond));
  EXPECT_EQ(w.inbox("C", kA).done.at(slow).kind, HomaEvent::Kind::kResponse);
  EXPECT_TRUE(Scenario::MatchesPattern(w.inbox("C", kA).done.at(slow).message, 500'000));
  EXPECT_EQ(w.inbox("S", 0).requests, 6);
  EXPECT_EQ(w.host("S").stats().late_duplicates, 0u);
}

// An ack may ride only on DATA from the client endpoint that owes it: the
// server reads the packet's sport as the client. Client endpoint A finishes
// an RPC and owes S an ack; B's request, sent at once, must not carry it
// (S would credit it to B and never free A's RPC without a NEED_ACK).
TEST(HomaHostTest, AckRidesOnlyOnDataFromTheEndpointThatOwesIt) {
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", kA);
  w.Open("C", kB);
  w.Open("S", 0);
  uint64_t first = w.Call("C", kA, "S", 0, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kA).done.contains(first); }, kSecond));
  uint64_t second = w.Call("C", kB, "S", 0, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kB).done.contains(second); }, kSecond));
  w.RunFor(50 * kNsPerMs);
  EXPECT_EQ(w.host("S").num_server_rpcs(), 0u);
  EXPECT_EQ(w.host("S").stats().need_acks_sent, 0u);
  EXPECT_EQ(w.host("S").stats().late_duplicates, 0u);
}

// ---------------------------------------------------- unknown endpoints

// A request to an endpoint id the server's socket does not host: counted,
// no state created; the client's RESEND is answered RPC_UNKNOWN (as for an
// RPC the server holds nothing for), and after homa.max_restarts the call
// fails with kUnavailable.
TEST(HomaHostTest, PacketForAnUnknownEndpointIsCountedAndAnsweredAsUnknownRpc) {
  HomaConfig config;
  config.max_restarts = 2;
  World w;
  w.AddHost("C", config);
  w.AddHost("S", config);
  w.Open("C", 0);
  w.Open("S", kA);
  uint64_t id = w.Call("C", 0, "S", /*to_ep=*/7, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", 0).done.contains(id); }, kSecond));
  const HomaEvent& failed = w.inbox("C", 0).done.at(id);
  EXPECT_EQ(failed.kind, HomaEvent::Kind::kFailed);
  EXPECT_EQ(failed.status.code(), StatusCode::kUnavailable);
  const HomaStats& s = w.host("S").stats();
  EXPECT_GE(s.wrong_port, 3u);  // the request, its restarts, the RESENDs
  EXPECT_GE(s.rpc_unknown_sent, 1u);
  EXPECT_EQ(s.from_stranger, 0u);
  EXPECT_EQ(w.host("S").num_peers(), 0u);
  EXPECT_EQ(w.host("S").num_server_rpcs(), 0u);
  EXPECT_EQ(w.inbox("S", kA).requests, 0);
}

// A server's packet about one of our client RPCs, addressed to another of
// our endpoints: dropped and counted; the RPC is untouched.
TEST(HomaHostTest, ResponseToTheWrongEndpointIsDroppedAndCounted) {
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", kA);
  w.Open("C", kB);
  w.Open("S", 0);
  w.inbox("S", 0).echo = false;
  uint64_t id = w.Call("C", kA, "S", 0, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("S", 0).held.size() == 1; }, kSecond));
  // A forged response from the server's address, to B instead of A.
  auto forger = w.net().Attach("X", transport::NetAddress::Ipv4(0xC6120064, 4000));
  wire::CommonHeader common;
  common.type = wire::PacketType::kData;
  common.sport = 0;
  common.dport = kB;
  common.rpc_id = id ^ 1;
  wire::DataHeader data;
  data.message_length = 3;
  data.incoming = 3;
  std::vector<std::byte> packet(wire::kDataHeaderBytes + 3);
  ASSERT_TRUE(wire::EncodeDataHeader(common, data, packet).ok());
  transport::OutDatagram out{w.address("C"), packet};
  ASSERT_TRUE(forger->Send({&out, 1}).ok());
  w.RunFor(kNsPerMs);
  EXPECT_EQ(w.host("C").stats().endpoint_mismatch, 1u);
  EXPECT_TRUE(w.inbox("C", kA).done.empty());
  EXPECT_TRUE(w.inbox("C", kB).done.empty());
  EXPECT_EQ(w.ep("C", kA).num_client_rpcs(), 1u);
  // The real response still completes the RPC, at A.
  HomaEvent held = std::move(w.inbox("S", 0).held.front());
  ASSERT_TRUE(w.ep("S", 0).SendResponse(held.server_key, std::move(held.message)).ok());
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kA).done.contains(id); }, kSecond));
  EXPECT_EQ(w.inbox("C", kA).done.at(id).kind, HomaEvent::Kind::kResponse);
}

// A server packet for endpoint 1's RPC, addressed to endpoint 20 of a host
// with 20: client ids are unique over the host, so the RPC is found and the
// packet caught however many endpoints there are.
TEST(HomaHost, HandleDatagram__AResponseToTheWrongOneOfManyEndpointsIsCaught) {
  World w;
  w.AddHost("C");
  w.AddHost("S");
  for (uint16_t id = 1; id <= 20; ++id) w.Open("C", id);
  w.Open("S", 0);
  w.inbox("S", 0).echo = false;
  uint64_t id = w.Call("C", 1, "S", 0, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("S", 0).held.size() == 1; }, kSecond));
  auto forger = w.net().Attach("X", transport::NetAddress::Ipv4(0xC6120064, 4000));
  wire::CommonHeader common;
  common.type = wire::PacketType::kData;
  common.dport = 20;
  common.rpc_id = id ^ 1;
  wire::DataHeader data;
  data.message_length = 3;
  data.incoming = 3;
  std::vector<std::byte> packet(wire::kDataHeaderBytes + 3);
  ASSERT_TRUE(wire::EncodeDataHeader(common, data, packet).ok());
  transport::OutDatagram out{w.address("C"), packet};
  ASSERT_TRUE(forger->Send({&out, 1}).ok());
  w.RunFor(kNsPerMs);
  EXPECT_EQ(w.host("C").stats().endpoint_mismatch, 1u);
  EXPECT_EQ(w.ep("C", 1).num_client_rpcs(), 1u);
  EXPECT_TRUE(w.inbox("C", 20).done.empty());
}

TEST(HomaHost, Cancel__OnlyTheCallingEndpointsOwnRpc) {
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", kA);
  w.Open("C", kB);
  w.Open("S", 0);
  w.inbox("S", 0).echo = false;
  const uint64_t id = w.Call("C", kA, "S", 0, 100);
  EXPECT_FALSE(w.ep("C", kB).Cancel(id)) << "another endpoint's RPC";
  EXPECT_EQ(w.ep("C", kA).num_client_rpcs(), 1u);
  EXPECT_TRUE(w.ep("C", kA).Cancel(id));
  EXPECT_EQ(w.ep("C", kA).num_client_rpcs(), 0u);
  EXPECT_FALSE(w.ep("C", kA).Cancel(id)) << "already gone";
  HomaEvent event;
  EXPECT_FALSE(w.ep("C", kA).PopEvent(&event)) << "a cancelled RPC has no event";
}

// ------------------------------------------- the parts' decisions, on the wire

// The grant scheduler's grants, sent by the host: the receiver grants the
// rest of a request once its first packet shows it needs grants (the
// default window covers all of it), and the client the response's.
TEST(HomaHost, SendGrants__TheSchedulersGrantsGoOutToTheSender) {
  HomaConfig config;
  config.unsched_bytes = 2 * 1424;
  World w;
  w.AddHost("A", config);
  w.AddHost("B", config);
  w.Open("A", 0);
  w.Open("B", 0);
  w.net().SetLogFilter(DescriptionStartsWithAnyOf({"GRANT"}));
  const uint64_t id = w.Call("A", 0, "B", 0, 10'000);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("A", 0).done.contains(id); }, kSecond));
  EXPECT_EQ(w.net().Log(), "B->A GRANT 10000; A->B GRANT 10000");
  EXPECT_EQ(w.host("A").stats().grants_sent, 1u);
  EXPECT_EQ(w.host("B").stats().grants_sent, 1u);
}

// The timer's probes, sent by the host: a client that hears nothing for
// resend_ticks asks for its response; the server, which never had the
// request, answers RPC_UNKNOWN and the client sends it again. Its ack goes
// at its next tick.
TEST(HomaHost, Tick__TheTimersProbesGoOutAsPackets) {
  World w;
  w.AddHost("A");
  w.AddHost("B");
  w.Open("A", 0);
  w.Open("B", 0);
  w.net().DropNext(FlowDescriptionStartsWith("A", "B", "DATA"));
  const uint64_t id = w.Call("A", 0, "B", 0, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("A", 0).done.contains(id); }, kSecond));
  w.RunFor(20 * kNsPerMs);  // the ack
  EXPECT_EQ(w.net().Log(),
            "A->B DATA 100@0 [dropped]; A->B RESEND 60000@0; B->A RPC_UNKNOWN; "
            "A->B DATA 100@0; B->A DATA 100@0; A->B ACK 0");
}

// A server whose answer goes unacknowledged asks for the ack (NEED_ACK),
// and the client, which finished the RPC, answers with it. (The ACKs list
// no id: their ack floor, above the finished id, says it all.)
TEST(HomaHost, Tick__AServerAsksForAMissingAck) {
  World w;
  w.AddHost("A");
  w.AddHost("B");
  w.Open("A", 0);
  w.Open("B", 0);
  w.net().DropNext(FlowDescriptionStartsWith("A", "B", "ACK"));
  const uint64_t id = w.Call("A", 0, "B", 0, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("A", 0).done.contains(id); }, kSecond));
  w.RunFor(20 * kNsPerMs);
  EXPECT_EQ(w.net().Log(),
            "A->B DATA 100@0; B->A DATA 100@0; A->B ACK 0 [dropped]; B->A NEED_ACK; A->B ACK 0");
  EXPECT_EQ(w.host("B").num_server_rpcs(), 0u);
}

// ------------------------------------------------------------- closing

TEST(HomaHostTest, ClosingAnEndpointFailsItsClientRpcsAndFreesItsServerRpcs) {
  World w;
  w.AddHost("C");
  w.AddHost("S");
  w.Open("C", kA);
  w.Open("C", kB);
  w.Open("S", kA);
  w.Open("S", kB);
  w.inbox("S", kA).echo = false;
  w.inbox("S", kB).echo = false;
  uint64_t pending = w.Call("C", kA, "S", kA, 100);
  uint64_t other = w.Call("C", kB, "S", kB, 100);
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("S", kB).held.size() == 1; }, kSecond));
  ASSERT_EQ(w.inbox("S", kA).held.size(), 1u);

  // Client side: the pending RPC fails with kCancelled, its event poppable.
  HomaEndpoint& client_a = w.ep("C", kA);
  client_a.Close();
  EXPECT_TRUE(client_a.closed());
  EXPECT_EQ(client_a.num_client_rpcs(), 0u);
  HomaEvent event;
  ASSERT_TRUE(client_a.PopEvent(&event));
  EXPECT_EQ(event.kind, HomaEvent::Kind::kFailed);
  EXPECT_EQ(event.client_id, pending);
  EXPECT_EQ(event.status.code(), StatusCode::kCancelled);
  EXPECT_EQ(client_a.SendRequest(w.address("S"), Buffer()).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(w.host("C").num_client_rpcs(), 1u);  // B's

  // Server side: B's held RPC is forgotten; answering it now fails.
  HomaEndpoint& server_b = w.ep("S", kB);
  server_b.Close();
  EXPECT_EQ(server_b.num_server_rpcs(), 0u);
  EXPECT_EQ(w.host("S").num_server_rpcs(), 1u);  // A's, whose client closed
  EXPECT_EQ(server_b.SendResponse(w.inbox("S", kB).held.front().server_key, Buffer())
                .code(),
            StatusCode::kFailedPrecondition);
  // The closed client's ack tells S's A to forget its RPC.
  w.RunFor(20 * kNsPerMs);
  EXPECT_EQ(w.host("S").num_server_rpcs(), 0u);

  // Reopening B does not run the old request again: its id was tombstoned,
  // so the client's restarted copy is a late duplicate.
  w.Drop("S", kB);
  w.Open("S", kB);
  w.inbox("S", kB).requests = 0;
  ASSERT_TRUE(w.RunUntil([&] { return w.inbox("C", kB).done.contains(other); }, 10 * kSecond));
  EXPECT_EQ(w.inbox("C", kB).done.at(other).kind, HomaEvent::Kind::kFailed);
  EXPECT_EQ(w.inbox("S", kB).requests, 0);
  EXPECT_GE(w.host("S").stats().late_duplicates, 1u);
}

TEST(HomaHostTest, EndpointOutlivingItsHostFailsItsCallsWithoutCrashing) {
  World w;
  w.AddHost("S");
  w.Open("S", 0);
  auto net = w.net().Attach("H", transport::NetAddress::Ipv4(0xC6120065, 4000));
  auto host = HomaHost::Create(HomaConfig{}, net.get(), w.clock());
  ASSERT_TRUE(host.ok());
  auto ep = (*host)->OpenEndpoint(kA);
  ASSERT_TRUE(ep.ok());
  auto id = (*ep)->SendRequest(w.address("S"), Scenario::Pattern(10));
  ASSERT_TRUE(id.ok());
  host->reset();
  EXPECT_EQ((*ep)->host(), nullptr);
  HomaEvent event;
  ASSERT_TRUE((*ep)->PopEvent(&event));
  EXPECT_EQ(event.kind, HomaEvent::Kind::kFailed);
  EXPECT_EQ(event.status.code(), StatusCode::kCancelled);
  EXPECT_EQ((*ep)->SendRequest(w.address("S"), Buffer()).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_FALSE((*ep)->Cancel(*id));
  EXPECT_EQ((*ep)->Poll().work, 0);
  EXPECT_EQ((*ep)->ReadableFd(), -1);
}

}  // namespace
}  // namespace wharf::homa
