// Tests for the kernel-udp datagram header and UdpReassembler: order,
// duplicates, loss and expiry on an injected time, the caps, bad input.
#include "bench/kernel_udp_reassembly.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wharf::bench {
namespace {

constexpr size_t kP = kKernelUdpMaxPayloadBytes;

// The datagrams a sender cuts `message` into.
std::vector<std::string> Cut(uint64_t rpc_id, const std::string& message) {
  std::vector<std::string> out;
  size_t offset = 0;
  do {
    const size_t len = std::min(kP, message.size() - offset);
    std::string d(kKernelUdpHeaderBytes, '\0');
    EncodeKernelUdpHeader({.rpc_id = rpc_id,
                           .offset = static_cast<uint32_t>(offset),
                           .total_bytes = static_cast<uint32_t>(message.size())},
                          d.data());
    d += message.substr(offset, len);
    out.push_back(d);
    offset += len;
  } while (offset < message.size());
  return out;
}

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7) % 26);
  return s;
}

UdpPeerKey Peer(uint8_t n) {
  UdpPeerKey k;
  k.bytes[4] = n;
  return k;
}

std::span<const char> Span(const std::string& s) { return {s.data(), s.size()}; }

TEST(KernelUdpHeaderTest, RoundTripsLittleEndian) {
  char buf[kKernelUdpHeaderBytes];
  EncodeKernelUdpHeader({.rpc_id = 0x0102030405060708ull, .offset = 0x0a0b0c0d, .total_bytes = 7},
                        buf);
  EXPECT_EQ(buf[0], 0x08);
  EXPECT_EQ(buf[8], 0x0d);
  const KernelUdpHeader h = DecodeKernelUdpHeader(buf);
  EXPECT_EQ(h.rpc_id, 0x0102030405060708ull);
  EXPECT_EQ(h.offset, 0x0a0b0c0du);
  EXPECT_EQ(h.total_bytes, 7u);
}

TEST(UdpReassemblerTest, OneDatagramMessagesCompleteAtOnce) {
  UdpReassembler r({});
  for (size_t n : {size_t{0}, size_t{1}, kP}) {
    const std::string m = Pattern(n);
    const auto d = Cut(9, m);
    ASSERT_EQ(d.size(), 1u);
    const UdpAddResult a = r.Add(Peer(1), Span(d[0]), 0);
    ASSERT_EQ(a.outcome, UdpAddOutcome::kComplete) << n;
    EXPECT_EQ(a.rpc_id, 9u);
    EXPECT_EQ(std::string(a.message.begin(), a.message.end()), m);
  }
  EXPECT_EQ(r.partial(), 0u);
  EXPECT_EQ(r.counters().completed, 3u);
}

TEST(UdpReassemblerTest, ReassemblesOutOfOrderAndIgnoresDuplicates) {
  UdpReassembler r({});
  const std::string m = Pattern(5 * kP + 17);
  auto d = Cut(42, m);
  ASSERT_EQ(d.size(), 6u);
  const std::vector<int> order = {5, 2, 0, 2, 4, 1, 0, 3};  // 2 and 0 twice
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    const UdpAddResult a = r.Add(Peer(1), Span(d[order[i]]), 10);
    const bool dup = (i == 3 || i == 6);
    EXPECT_EQ(a.outcome, dup ? UdpAddOutcome::kDuplicate : UdpAddOutcome::kPartial) << i;
  }
  EXPECT_EQ(r.partial(), 1u);
  const UdpAddResult a = r.Add(Peer(1), Span(d[3]), 10);
  ASSERT_EQ(a.outcome, UdpAddOutcome::kComplete);
  EXPECT_EQ(a.rpc_id, 42u);
  EXPECT_EQ(a.total_bytes, m.size());
  EXPECT_EQ(std::string(a.message.begin(), a.message.end()), m);
  EXPECT_EQ(r.partial(), 0u);
  EXPECT_EQ(r.counters().duplicates, 2u);
  EXPECT_EQ(r.counters().completed, 1u);
}

TEST(UdpReassemblerTest, KeysByPeerAndRpcId) {
  UdpReassembler r({});
  const std::string m = Pattern(2 * kP);
  const auto a = Cut(1, m);
  const auto b = Cut(2, m);
  EXPECT_EQ(r.Add(Peer(1), Span(a[0]), 0).outcome, UdpAddOutcome::kPartial);
  // Same id from another peer, another id from the same peer: separate.
  EXPECT_EQ(r.Add(Peer(2), Span(a[1]), 0).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.Add(Peer(1), Span(b[1]), 0).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.partial(), 3u);
  EXPECT_EQ(r.Add(Peer(1), Span(a[1]), 0).outcome, UdpAddOutcome::kComplete);
  EXPECT_EQ(r.partial(), 2u);
}

TEST(UdpReassemblerTest, MissingDatagramNeverCompletesAndExpires) {
  UdpReassembler r({.idle_timeout_ns = kNsPerSec});
  const auto d = Cut(7, Pattern(3 * kP));
  EXPECT_EQ(r.Add(Peer(1), Span(d[0]), 100).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.Add(Peer(1), Span(d[2]), 200).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.NextExpiryNs(), 200 + kNsPerSec);  // idle counts from the last datagram
  r.Expire(200 + kNsPerSec - 1);
  EXPECT_EQ(r.partial(), 1u);
  r.Expire(200 + kNsPerSec);
  EXPECT_EQ(r.partial(), 0u);
  EXPECT_EQ(r.counters().expired, 1u);
  EXPECT_EQ(r.NextExpiryNs(), kNever);
  // The missing datagram, late: starts a new partial message, no completion.
  EXPECT_EQ(r.Add(Peer(1), Span(d[1]), 2 * kNsPerSec).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.counters().completed, 0u);
}

TEST(UdpReassemblerTest, ExpiresOnlyTheIdleOnes) {
  UdpReassembler r({.idle_timeout_ns = 100});
  const auto a = Cut(1, Pattern(3 * kP));
  const auto b = Cut(2, Pattern(3 * kP));
  r.Add(Peer(1), Span(a[0]), 0);
  r.Add(Peer(1), Span(b[0]), 10);
  r.Add(Peer(1), Span(a[1]), 50);  // a is now the more recently touched
  r.Expire(110);
  EXPECT_EQ(r.partial(), 1u);
  EXPECT_EQ(r.Add(Peer(1), Span(a[2]), 120).outcome, UdpAddOutcome::kComplete);
  EXPECT_EQ(r.counters().expired, 1u);
}

TEST(UdpReassemblerTest, TableCapDropsAndCounts) {
  UdpReassembler r({.max_partial = 2});
  std::vector<std::vector<std::string>> msgs;
  for (uint64_t id = 1; id <= 3; ++id) msgs.push_back(Cut(id, Pattern(2 * kP)));
  EXPECT_EQ(r.Add(Peer(1), Span(msgs[0][0]), 0).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.Add(Peer(1), Span(msgs[1][0]), 0).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.Add(Peer(1), Span(msgs[2][0]), 0).outcome, UdpAddOutcome::kTableFull);
  EXPECT_EQ(r.counters().table_full, 1u);
  // Known messages still progress; completing one frees a slot.
  EXPECT_EQ(r.Add(Peer(1), Span(msgs[0][1]), 0).outcome, UdpAddOutcome::kComplete);
  EXPECT_EQ(r.Add(Peer(1), Span(msgs[2][0]), 0).outcome, UdpAddOutcome::kPartial);
}

TEST(UdpReassemblerTest, BufferedBytesCapDropsAndCounts) {
  UdpReassembler r({.max_buffered_bytes = 3 * kP});
  const auto a = Cut(1, Pattern(2 * kP));
  const auto b = Cut(2, Pattern(2 * kP));
  EXPECT_EQ(r.Add(Peer(1), Span(a[0]), 0).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.Add(Peer(1), Span(b[0]), 0).outcome, UdpAddOutcome::kTableFull);
  EXPECT_EQ(r.counters().table_full, 1u);
}

TEST(UdpReassemblerTest, WithoutPayloadTracksDatagramsOnly) {
  UdpReassembler r({.max_buffered_bytes = 1, .keep_payload = false});  // byte cap unused
  const auto d = Cut(5, Pattern(2 * kP + 1));
  EXPECT_EQ(r.Add(Peer(1), Span(d[0]), 0).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.Add(Peer(1), Span(d[1]), 0).outcome, UdpAddOutcome::kPartial);
  const UdpAddResult a = r.Add(Peer(1), Span(d[2]), 0);
  EXPECT_EQ(a.outcome, UdpAddOutcome::kComplete);
  EXPECT_EQ(a.total_bytes, 2 * kP + 1);
  EXPECT_TRUE(a.message.empty());
}

TEST(UdpReassemblerTest, MalformedDatagramsAreCountedAndDropped) {
  UdpReassembler r({});
  std::vector<std::string> bad;
  bad.push_back("short");
  auto header = [](uint32_t offset, uint32_t total, size_t payload) {
    std::string d(kKernelUdpHeaderBytes, '\0');
    EncodeKernelUdpHeader({.rpc_id = 3, .offset = offset, .total_bytes = total}, d.data());
    return d + std::string(payload, 'x');
  };
  bad.push_back(header(0, 10, 11));                                       // longer than the total
  bad.push_back(header(0, 10, 9));                                        // shorter than the total
  bad.push_back(header(kP, 2 * kP, kP + 1));                              // offset + len > total
  bad.push_back(header(5, 3 * kP, kP));                                   // not on the cut
  bad.push_back(header(0, 3 * kP, kP - 1));                               // a short middle piece
  bad.push_back(header(3 * kP, 3 * kP, 0));                               // offset at the end
  bad.push_back(header(0, uint32_t{kKernelUdpMaxMessageBytes} + 1, kP));  // too large
  bad.push_back(header(0, 0, 1));  // empty message with bytes
  bad.push_back(std::string(kKernelUdpMaxDatagramBytes + 100, 'z'));
  for (const std::string& d : bad) {
    EXPECT_EQ(r.Add(Peer(1), Span(d), 0).outcome, UdpAddOutcome::kMalformed) << d.size();
  }
  EXPECT_EQ(r.counters().malformed, bad.size());
  // A datagram whose total disagrees with its message's stored total.
  EXPECT_EQ(r.Add(Peer(1), Span(header(0, 2 * kP, kP)), 0).outcome, UdpAddOutcome::kPartial);
  EXPECT_EQ(r.Add(Peer(1), Span(header(kP, 3 * kP, kP)), 0).outcome, UdpAddOutcome::kMalformed);
  EXPECT_EQ(r.partial(), 1u);
  EXPECT_EQ(r.counters().completed, 0u);
}

}  // namespace
}  // namespace wharf::bench
